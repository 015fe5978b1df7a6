// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import DBusKit

/// `gattctl status`: adapter, registration, advertisements, subscriptions, last error.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show gattd's adapter, registration, advertisements, subscriptions, pairing and last error.",
        discussion: ExitStatus.helpText)

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        let status = try client.status()
        let channels = try ChannelList(client)
        let value = { (key: ControlKey) in status.first { $0.0 == key.rawValue }?.1 }
        let adverts = (value(.advertisements)?.dictionaryEntries ?? []).map {
            ($0.key.asString ?? "", $0.value.asString ?? "")
        }
        let registered = value(.registered)?.asBool ?? false
        let subscriptions = Int(value(.subscriptions)?.asUInt32 ?? 0)
        let lastError = value(.lastError)?.asString ?? ""
        let pairing = value(.pairing)?.asString ?? "none"
        let pairingOpen = value(.pairingOpen)?.asBool ?? false
        let bondedOnly = value(.bondedOnly)?.asBool ?? false
        if json {
            printLine(
                JSONText.render(
                    .object([
                        ("version", .string(value(.version)?.asString ?? "")),
                        ("adapter", .string(value(.adapter)?.asString ?? "")),
                        ("registered", .bool(registered)),
                        ("registration", .string(value(.registration)?.asString ?? "")),
                        ("advertisements", .object(adverts.map { ($0.0, .string($0.1)) })),
                        ("subscriptions", .number(subscriptions)),
                        ("pairing", .string(pairing)), ("pairingOpen", .bool(pairingOpen)),
                        ("bondedOnly", .bool(bondedOnly)),
                        ("lastError", lastError.isEmpty ? .null : .string(lastError)),
                        ("channels", channels.json),
                    ])))
            return
        }
        let adapter = value(.adapter)?.asString ?? ""
        printLine("gattd \(value(.version)?.asString ?? "?")")
        printLine("adapter:        \(adapter.isEmpty ? "(none)" : adapter)")
        printLine("registered:     \(registered ? "yes" : "no") (\(value(.registration)?.asString ?? ""))")
        if adverts.isEmpty {
            printLine("advertisements: (none)")
        } else {
            printLine("advertisements:")
            for (id, state) in adverts { printLine("  \(id): \(state)") }
        }
        printLine("subscriptions:  \(subscriptions)")
        let pairingState = pairing == "none" ? "" : (pairingOpen ? ", open" : ", closed")
        printLine("pairing:        \(pairing)\(pairingState)\(bondedOnly ? ", bonded centrals only" : "")")
        if !channels.channels.isEmpty {
            printLine("channels:")
            for line in channels.lines { printLine(line) }
        }
        printLine("last error:     \(lastError.isEmpty ? "(none)" : lastError)")
    }
}
