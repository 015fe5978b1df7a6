// SPDX-License-Identifier: MIT

import ArgumentParser
import DBusKit

/// `gattctl advertise on|off [ID]`.
struct AdvertiseCommand: ParsableCommand {
    enum Switch: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Start or stop an advertisement, or all of them.",
        discussion: """
            Without ID, every advertisement in the configuration is switched. gattd remembers \
            the state across restarts (in its state file) until it is switched again. Prints \
            "<id>: on" or "<id>: off" per advertisement.

            \(ExitStatus.helpText)
            """)

    @Argument(help: "on or off.")
    var state: Switch

    @Argument(help: "The advertisement's id (default: all).")
    var id: String?

    func run() throws {
        let client = try ControlClient()
        let ids: [String]
        if let id {
            ids = [id]
        } else {
            let status = try client.status()
            let adverts = status.first { $0.0 == "Advertisements" }?.1.dictionaryEntries ?? []
            ids = adverts.compactMap { $0.key.asString }
            if ids.isEmpty { printError("gattctl: the configuration has no advertisements") }
        }
        let member = state == .on ? "StartAdvertising" : "StopAdvertising"
        for id in ids {
            _ = try client.call(member, [.string(id)])
            printLine("\(id): \(state.rawValue)")
        }
    }
}
