// SPDX-License-Identifier: MIT

import ArgumentParser
import BLEModel
import ControlAPI
import DBusKit

/// `gattctl pairing [open [SECONDS] | confirm [ADDRESS] | reject [ADDRESS]]`.
struct PairingCommand: ParsableCommand {
    enum Action: String, ExpressibleByArgument, CaseIterable {
        case status, open, confirm, reject
    }

    static let configuration = CommandConfiguration(
        commandName: "pairing",
        abstract: "Show whether centrals may pair now, open the pairing window, or confirm a pairing.",
        discussion: """
            status (the default): prints the pairing mode and whether pairing is open, e.g. \
            "pairing just-works: open for 117 s". open [SECONDS]: lets new centrals pair for \
            SECONDS (default: the configured security.pairableSeconds), like a phone's pairing \
            button; prints "pairing open for <n> s". Refused when gattd does not pair or its \
            security.pairable is "always" or "never". confirm [ADDRESS] / reject [ADDRESS] \
            (security.pairing "numeric-comparison"): accepts or rejects the pairing waiting for \
            the central at ADDRESS, after comparing the six digits gattctl watch shows \
            ("confirm <digits> ...") with the central's; without ADDRESS, the only one waiting. \
            Prints "<address>: confirmed" or "<address>: rejected" (or "pairing confirmed"/"pairing \
            rejected"); exit status 3 when nothing waits for that central.

            \(ExitStatus.helpText)
            """)

    @Argument(help: "status, open, confirm or reject.")
    var action: Action = .status

    @Argument(help: "With open: seconds the window stays open (1...86400). With confirm or reject: the central's address.")
    var argument: String?

    /// `open`'s seconds, once validated.
    private var seconds: UInt32? { argument.flatMap { UInt32($0) } }

    func validate() throws {
        guard let argument else { return }
        switch action {
        case .open:
            guard let seconds = UInt32(argument), (1...86_400).contains(seconds) else {
                throw ValidationError("SECONDS must be 1...86400")
            }
        case .confirm, .reject:
            guard ControlRequest.isAddress(argument) else {
                throw ValidationError("\"\(argument)\" is not an address like AA:BB:CC:DD:EE:FF")
            }
        case .status:
            throw ValidationError("status takes no argument")
        }
    }

    func run() throws {
        let client = try ControlClient()
        if action == .confirm || action == .reject {
            let address = argument?.uppercased() ?? ""
            _ = try client.call(action == .confirm ? .confirmPairing : .rejectPairing, [.string(address)])
            let word = action == .confirm ? "confirmed" : "rejected"
            printLine(address.isEmpty ? "pairing \(word)" : "\(address): \(word)")
            return
        }
        if action == .open {
            let reply = try client.call(.openPairing, [.uint32(seconds ?? 0)])
            printLine("pairing open for \(reply.first?.asUInt32 ?? seconds ?? 0) s")
            return
        }
        let status = try client.status()
        let value = { (key: ControlKey) in status.first { $0.0 == key.rawValue }?.1 }
        let mode = value(.pairing)?.asString ?? "none"
        guard mode != "none" else {
            printLine("pairing none: gattd does not pair")
            return
        }
        let pairable = value(.pairable)?.asString ?? ""
        let open = value(.pairingOpen)?.asBool ?? false
        let left = value(.pairingSecondsLeft)?.asUInt32 ?? 0
        let state: String
        switch (open, pairable) {
        case (true, "always"): state = "open (always)"
        case (true, _): state = "open for \(left) s"
        case (false, "never"): state = "closed (never)"
        default: state = "closed (gattctl pairing open opens it)"
        }
        printLine("pairing \(mode): \(state)")
    }
}

/// `gattctl bonds [remove ADDRESS]`.
struct BondsCommand: ParsableCommand {
    enum Action: String, ExpressibleByArgument, CaseIterable {
        case list, remove
    }

    static let configuration = CommandConfiguration(
        commandName: "bonds",
        abstract: "List the centrals bonded with the adapter, or remove one.",
        discussion: """
            list (the default): one line per central bluetoothd keeps keys for: "<address> \
            <name or -> bonded|paired [trusted] [connected]". remove ADDRESS: bluetoothd \
            forgets the central and its keys (and drops its link); it must pair again. Prints \
            "<address>: removed".

            \(ExitStatus.helpText)
            """)

    @Argument(help: "list or remove.")
    var action: Action = .list

    @Argument(help: "With remove: the central's address, AA:BB:CC:DD:EE:FF.")
    var address: String?

    @Flag(name: .long, help: "list: print a JSON array.")
    var json = false

    func validate() throws {
        switch action {
        case .remove:
            guard address != nil else { throw ValidationError("bonds remove needs ADDRESS") }
            guard !json else { throw ValidationError("--json goes with list only") }
        case .list:
            guard address == nil else { throw ValidationError("ADDRESS goes with remove only") }
        }
    }

    func run() throws {
        let client = try ControlClient()
        if action == .remove, let address {
            _ = try client.call(.removeBond, [.string(address)])
            printLine("\(address.uppercased()): removed")
            return
        }
        let bonds = try client.call(.listBonds).first?.asArray ?? []
        var objects: [JSONValue] = []
        for bond in bonds {
            let address = bond.variantDictionaryValue(ControlKey.address.rawValue)?.asString ?? ""
            let name = bond.variantDictionaryValue(ControlKey.name.rawValue)?.asString
            let flag = { (key: ControlKey) in bond.variantDictionaryValue(key.rawValue)?.asBool ?? false }
            if json {
                objects.append(
                    .object([
                        ("address", .string(address)),
                        ("addressType", bond.variantDictionaryValue(ControlKey.addressType.rawValue)?.asString.map { .string($0) } ?? .null),
                        ("name", name.map { .string($0) } ?? .null),
                        ("paired", .bool(flag(.paired))), ("bonded", .bool(flag(.bonded))),
                        ("trusted", .bool(flag(.trusted))), ("connected", .bool(flag(.connected))),
                    ]))
                continue
            }
            var words = [address, name ?? "-", flag(.bonded) ? "bonded" : "paired"]
            if flag(.trusted) { words.append("trusted") }
            if flag(.connected) { words.append("connected") }
            printLine(words.joined(separator: " "))
        }
        if json { printLine(JSONText.render(.array(objects))) }
    }
}
