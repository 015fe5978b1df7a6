// SPDX-License-Identifier: MIT

import Foundation
import Testing

/// Runs the checks of the shipped systemd files (systemd/tests/*.sh) so `swift test`
/// covers them: unit verification and exposure score, sysusers, and the D-Bus policy
/// enforced by a private dbus-daemon against clients running as other users.
@Suite(.enabled(if: getuid() == 0, "needs root (namespaces, setpriv to other uids)"))
struct SystemdFilesTests {
    static let scripts = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("systemd/tests")

    @Test func unitVerifiesWithExposureAtMostTwo() throws {
        let (status, output) = try Self.run("check-unit.sh")
        #expect(status == 0, "\(output)")
        #expect(output.contains("all unit checks passed"))
    }

    @Test func dbusPolicyAllowsOwnersAndDeniesOthers() throws {
        let (status, output) = try Self.run("check-dbus-policy.sh")
        #expect(status == 0, "\(output)")
        #expect(output.contains("ok   nobody may not call org.gattd.*"))
        #expect(output.contains("all policy checks passed"))
    }

    static func run(_ script: String) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = scripts.appendingPathComponent(script)
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
