// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import Glibc

/// `gattctl`: the command-line client of gattd's control API (org.gattd.Manager1).
struct Gattctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gattctl",
        abstract: """
            Read and set gattd's values, watch writes and changes, switch advertisements, manage pairing, bonds and \
            centrals.
            """,
        discussion: """
            Talks to gattd over the system bus (DBUS_SYSTEM_BUS_ADDRESS when set), name \
            org.gattd, object /org/gattd, interface org.gattd.Manager1. --instance NAME, before \
            or after the subcommand, talks to gattd@NAME (one gattd per radio) at org.gattd.NAME \
            instead. The bus policy lets root and members of group gattd call it. See gattctl(1), and docs/control-api.md (installed \
            in /usr/share/doc/gattd/docs/).

            \(ExitStatus.helpText)
            """,
        version: "gattctl \(gattdVersion)",
        subcommands: [
            ListCommand.self, GetCommand.self, SetCommand.self, WatchCommand.self, AdvertiseCommand.self,
            StatusCommand.self, PairingCommand.self, BondsCommand.self, CentralsCommand.self, DisconnectCommand.self,
            ChannelCommand.self,
        ])

    /// Like `main()`, but with the exit statuses above: a usage error exits 2 (not
    /// ArgumentParser's 64) and a `Failure` prints its message and exits with its status.
    static func mainWithDocumentedExitCodes() -> Never {
        do {
            var command = try parseAsRoot(ControlTarget.current.get().arguments)
            try command.run()
            Glibc.exit(0)
        } catch let failure as Failure {
            printError("gattctl: \(failure.message)")
            Glibc.exit(failure.status.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                printError(fullMessage(for: error))
                Glibc.exit(ExitStatus.usage.rawValue)
            }
            self.exit(withError: error)
        }
    }
}

/// One line on stderr.
func printError(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(0x0A)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// One line on stdout, written at once (watch's readers see each event as it happens).
func printLine(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(0x0A)
    _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}
