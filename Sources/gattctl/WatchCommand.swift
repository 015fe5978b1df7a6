// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import DBusKit
import Glibc

/// `gattctl watch`: one line per write from a central and per value change.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print one line per event (writes, value changes, subscriptions, centrals, pairing, adapter, advertisements).",
        discussion: """
            Lines: "written <id> <hex> <text> address=<address> device=<path>" for a central's \
            write (also when the value did not change), "changed <id> <hex> <text> \
            origin=<central|control|timer|restored>" for every change, "subscribed <id>" / \
            "unsubscribed <id>", "connected <address> [address-type=<public|random>] \
            [name=<name>] [mtu=<mtu>] device=<path>" / "disconnected ...", "address-changed \
            <address> [address-type=<type>] old-address=<address> [old-address-type=<type>] \
            device=<path>" (a connected central bonded and is named by its identity now); a \
            central's address is the one bluetoothd gives it, the path only bluetoothd's \
            handle for it. "adapter <name> \
            state=<present|gone|powered|unpowered>", "advertisement <id> state=<state>", and \
            "ready <id>" (room again in a delivery-all queue), "passkey <6 digits> \
            address=<address> device=<path>" (the passkey to type in on the central pairing now), \
            "confirm <6 digits> address=<address> device=<path>" (numeric comparison: the digits \
            the central shows too; answer with gattctl pairing confirm|reject), \
            "pairing open|closed [seconds=<n>]". With --json, one object per line \
            with "event" and the same fields. "watching" goes to stderr once the subscription \
            is in place. Exits 0 on SIGINT/SIGTERM, 1 when gattd leaves the bus.

            \(ExitStatus.helpText)
            """)

    @Flag(name: .long, help: "One JSON object per event and line.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        var exitStatus: ExitStatus?
        let subscription = client.connection.subscribe(
            sender: ControlTarget.busName, path: ControlNames.managerPath, interface: ControlNames.managerInterface
        ) { message in
            guard let member = message.member, let arguments = try? message.arguments() else { return }
            if let line = render(member, arguments) { printLine(line) }
        }
        let owner = client.connection.subscribe(
            sender: Freedesktop.bus, interface: Freedesktop.busInterface, member: Freedesktop.nameOwnerChanged,
            arg0: ControlTarget.busName
        ) { message in
            guard let arguments = try? message.arguments(), arguments.count == 3, arguments[2].asString == "" else {
                return
            }
            exitStatus = .unreachable
        }
        // The match rules were sent before this call, so the bus applies them first: once
        // gattd answers, no event after this point is missed. gattd sends the signals only
        // while someone is subscribed, and forgets us when we leave the bus.
        _ = try client.call(.subscribe)
        printError("watching \(ControlTarget.busName) (Ctrl-C to stop)")
        let signals = [SIGINT, SIGTERM].map { signo in client.loop.onSignal(signo) { exitStatus = .ok } }
        while exitStatus == nil {
            _ = client.loop.run(until: { exitStatus != nil }, timeout: .seconds(3600))
        }
        withExtendedLifetime((subscription, owner, signals)) {}
        if exitStatus == .unreachable { throw Failure(.unreachable, "gattd stopped (it left the bus); nothing more to watch") }
    }

    /// One line for a signal of org.gattd.Manager1; nil for one this gattctl does not know.
    private func render(_ member: String, _ arguments: [DBusValue]) -> String? {
        guard let signal = ControlSignal(rawValue: member) else { return nil }
        let strings = arguments.map(\.asString)
        switch (signal, arguments.count) {
        case (.valueWritten, 4):
            guard let id = strings[0], let bytes = arguments[1].asBytes, let device = strings[2], let address = strings[3]
            else { return nil }
            return valueLine("written", id, bytes, [("address", address), ("device", device)])
        case (.valueChanged, 3):
            guard let id = strings[0], let bytes = arguments[1].asBytes, let origin = strings[2] else { return nil }
            return valueLine("changed", id, bytes, [("origin", origin)])
        case (.subscriptionChanged, 2):
            guard let id = strings[0], let notifying = arguments[1].asBool else { return nil }
            return event(notifying ? "subscribed" : "unsubscribed", [("id", id)])
        case (.centralSubscriptionChanged, 3):
            guard let id = strings[0], let device = arguments[1].asObjectPath, let subscribed = arguments[2].asBool else {
                return nil
            }
            return event(subscribed ? "central-subscribed" : "central-unsubscribed", [("id", id), ("device", device.rawValue)])
        case (.centralConnected, 2), (.centralDisconnected, 2):
            guard let device = arguments[0].asObjectPath else { return nil }
            let info = arguments[1]
            var fields = [("address", info.variantDictionaryValue(ControlKey.address.rawValue)?.asString ?? "")]
            if let type = info.variantDictionaryValue(ControlKey.addressType.rawValue)?.asString {
                fields.append(("address-type", type))
            }
            if let name = info.variantDictionaryValue(ControlKey.name.rawValue)?.asString { fields.append(("name", name)) }
            if let mtu = info.variantDictionaryValue(ControlKey.mtu.rawValue)?.asUInt16 { fields.append(("mtu", "\(mtu)")) }
            fields.append(("device", device.rawValue))
            return event(signal == .centralConnected ? "connected" : "disconnected", fields)
        case (.centralAddressChanged, 2):
            guard let device = arguments[0].asObjectPath else { return nil }
            let info = arguments[1]
            var fields = [("address", info.variantDictionaryValue(ControlKey.address.rawValue)?.asString ?? "")]
            if let type = info.variantDictionaryValue(ControlKey.addressType.rawValue)?.asString {
                fields.append(("address-type", type))
            }
            fields.append(("old-address", info.variantDictionaryValue(ControlKey.oldAddress.rawValue)?.asString ?? ""))
            if let type = info.variantDictionaryValue(ControlKey.oldAddressType.rawValue)?.asString {
                fields.append(("old-address-type", type))
            }
            fields.append(("device", device.rawValue))
            return event("address-changed", fields)
        case (.adapterChanged, 2):
            guard let adapter = strings[0], let state = strings[1] else { return nil }
            return event("adapter", [("adapter", adapter), ("state", state)])
        case (.advertisementChanged, 2):
            guard let id = strings[0], let state = strings[1] else { return nil }
            return event("advertisement", [("id", id), ("state", state)])
        case (.readyToUpdate, 1):
            guard let id = strings[0] else { return nil }
            return event("ready", [("id", id)])
        case (.passkeyDisplayed, 3):
            guard let device = arguments[0].asObjectPath, let address = strings[1], let passkey = strings[2] else {
                return nil
            }
            return event("passkey", [("passkey", passkey), ("address", address), ("device", device.rawValue)])
        case (.pairingConfirmation, 3):
            guard let device = arguments[0].asObjectPath, let address = strings[1], let passkey = strings[2] else {
                return nil
            }
            return event("confirm", [("passkey", passkey), ("address", address), ("device", device.rawValue)])
        case (.pairingChanged, 2):
            guard let open = arguments[0].asBool, let seconds = arguments[1].asUInt32 else { return nil }
            return event("pairing", [("state", open ? "open" : "closed")] + (open && seconds > 0 ? [("seconds", "\(seconds)")] : []))
        default:
            return nil
        }
    }

    /// `<event> <first value> key=value ...`, or one JSON object.
    private func event(_ name: String, _ fields: [(String, String)]) -> String {
        if json {
            return JSONText.render(.object([("event", .string(name))] + fields.map { ($0.0, .string($0.1)) }))
        }
        let rest = fields.dropFirst().map { "\($0.0)=\($0.1)" }
        return ([name] + fields.prefix(1).map(\.1) + rest).joined(separator: " ")
    }

    private func valueLine(_ event: String, _ id: String, _ value: [UInt8], _ details: [(String, String)]) -> String {
        if json {
            return JSONText.render(
                .object([("event", .string(event)), ("id", .string(id))] + JSONText.valueMembers(value)
                    + details.map { ($0.0, .string($0.1)) }))
        }
        let hex = value.isEmpty ? "(empty)" : ValueText.hex(value)
        return (["\(event) \(id) \(hex) \(ValueText.quoted(value))"] + details.map { "\($0.0)=\($0.1)" })
            .joined(separator: " ")
    }
}
