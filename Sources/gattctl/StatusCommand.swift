// SPDX-License-Identifier: MIT

import ArgumentParser
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
        let value = { (name: String) in status.first { $0.0 == name }?.1 }
        let adverts = (value("Advertisements")?.dictionaryEntries ?? []).map {
            ($0.key.asString ?? "", $0.value.asString ?? "")
        }
        let registered = value("Registered")?.asBool ?? false
        let subscriptions = Int(value("Subscriptions")?.asUInt32 ?? 0)
        let lastError = value("LastError")?.asString ?? ""
        let pairing = value("Pairing")?.asString ?? "none"
        let pairingOpen = value("PairingOpen")?.asBool ?? false
        let bondedOnly = value("BondedOnly")?.asBool ?? false
        if json {
            printLine(
                JSONText.render(
                    .object([
                        ("version", .string(value("Version")?.asString ?? "")),
                        ("adapter", .string(value("Adapter")?.asString ?? "")),
                        ("registered", .bool(registered)),
                        ("registration", .string(value("Registration")?.asString ?? "")),
                        ("advertisements", .object(adverts.map { ($0.0, .string($0.1)) })),
                        ("subscriptions", .number(subscriptions)),
                        ("pairing", .string(pairing)), ("pairingOpen", .bool(pairingOpen)),
                        ("bondedOnly", .bool(bondedOnly)),
                        ("lastError", lastError.isEmpty ? .null : .string(lastError)),
                        ("channels", channels.json),
                    ])))
            return
        }
        let adapter = value("Adapter")?.asString ?? ""
        printLine("gattd \(value("Version")?.asString ?? "?")")
        printLine("adapter:        \(adapter.isEmpty ? "(none)" : adapter)")
        printLine("registered:     \(registered ? "yes" : "no") (\(value("Registration")?.asString ?? ""))")
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
