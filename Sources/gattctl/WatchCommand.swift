// SPDX-License-Identifier: MIT

import ArgumentParser
import Control
import DBusKit
import Glibc

/// `gattctl watch`: one line per write from a central and per value change.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print one line per write from a central and per value change, until interrupted.",
        discussion: """
            Lines: "written <id> <hex> <text> device=<path>" for a central's write (also when \
            the value did not change), "changed <id> <hex> <text> origin=<central|control|timer|restored>" \
            for every change. With --json, one object per line: {"event":"written"|"changed",\
            "id":…,"hex":…,"utf8":…,"device"|"origin":…}. "watching" goes to stderr once the \
            subscription is in place. Exits 0 on SIGINT/SIGTERM, 1 when gattd leaves the bus.

            \(ExitStatus.helpText)
            """)

    @Flag(name: .long, help: "One JSON object per event and line.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        var exitStatus: ExitStatus?
        let subscription = client.connection.subscribe(
            sender: ControlNames.busName, path: ControlNames.managerPath, interface: ControlNames.managerInterface
        ) { message in
            guard let member = message.member, let arguments = try? message.arguments(), arguments.count == 3,
                let id = arguments[0].asString, let value = arguments[1].asBytes, let detail = arguments[2].asString
            else { return }
            switch member {
            case "ValueWritten": printLine(render("written", id, value, ("device", detail)))
            case "ValueChanged": printLine(render("changed", id, value, ("origin", detail)))
            default: break
            }
        }
        let owner = client.connection.subscribe(
            sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            arg0: ControlNames.busName
        ) { message in
            guard let arguments = try? message.arguments(), arguments.count == 3, arguments[2].asString == "" else {
                return
            }
            printError("gattctl: gattd left the bus")
            exitStatus = .unreachable
        }
        // The match rules were sent before this call, so the bus applies them first: once
        // gattd answers, no event after this point is missed. gattd sends the signals only
        // while someone is subscribed, and forgets us when we leave the bus.
        _ = try client.call("Subscribe")
        printError("watching \(ControlNames.busName) (Ctrl-C to stop)")
        let signals = [SIGINT, SIGTERM].map { signo in client.loop.onSignal(signo) { exitStatus = .ok } }
        while exitStatus == nil {
            _ = client.loop.run(until: { exitStatus != nil }, timeout: .seconds(3600))
        }
        withExtendedLifetime((subscription, owner, signals)) {}
        if exitStatus == .unreachable { throw Failure(.unreachable, "gattd is no longer on the bus") }
    }

    private func render(_ event: String, _ id: String, _ value: [UInt8], _ detail: (String, String)) -> String {
        if json {
            return JSONText.render(
                .object([("event", .string(event)), ("id", .string(id))] + JSONText.valueMembers(value)
                    + [(detail.0, .string(detail.1))]))
        }
        let hex = value.isEmpty ? "(empty)" : ValueText.hex(value)
        return "\(event) \(id) \(hex) \(ValueText.quoted(value)) \(detail.0)=\(detail.1)"
    }
}
