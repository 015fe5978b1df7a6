// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import DBusKit

/// `gattctl advertise on|off [ID]`, `gattctl advertise set ID CHANGES [--persist]`.
struct AdvertiseCommand: ParsableCommand {
    enum Switch: String, ExpressibleByArgument, CaseIterable {
        case on, off, set
    }

    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Start or stop an advertisement, or all of them; or change one's data while it is on air.",
        discussion: """
            on|off: without ID, every advertisement in the configuration is switched. gattd \
            remembers the state across restarts (in its state file) until it is switched \
            again. Prints "<id>: on" or "<id>: off" per advertisement.

            set ID CHANGES: CHANGES is a JSON object with some of an advertisement's keys in \
            the definition's syntax (localName, serviceUUIDs, solicitUUIDs, manufacturerData, \
            serviceData, data, appearance, txPower, includes; null removes one), e.g. \
            '{"manufacturerData": {"0xFFFF": {"hex": "0102"}}}'. gattd checks it as --check \
            does (rules and byte budget) and sends it to bluetoothd without registering again. \
            --persist keeps it across restarts. Prints "<id>: changed".

            \(ExitStatus.helpText)
            """)

    @Argument(help: "on, off or set.")
    var state: Switch

    @Argument(help: "The advertisement's id (default for on/off: all).")
    var id: String?

    @Argument(help: "With set: the changes, a JSON object.")
    var changes: String?

    @Flag(name: .long, help: "With set: keep the changes across restarts.")
    var persist = false

    func validate() throws {
        if state == .set {
            guard id != nil, changes != nil else { throw ValidationError("advertise set needs ID and CHANGES") }
        } else {
            guard changes == nil, !persist else { throw ValidationError("CHANGES and --persist go with set only") }
        }
    }

    func run() throws {
        let client = try ControlClient()
        if state == .set, let id, let changes {
            _ = try client.call(.setAdvertisementData, [.string(id), .string(changes), .bool(persist)])
            printLine("\(id): changed")
            return
        }
        let ids: [String]
        if let id {
            ids = [id]
        } else {
            let status = try client.status()
            let adverts = status.first { $0.0 == ControlKey.advertisements.rawValue }?.1.dictionaryEntries ?? []
            ids = adverts.compactMap { $0.key.asString }
            if ids.isEmpty { printError("gattctl: the configuration has no advertisements") }
        }
        let method: ControlMethod = state == .on ? .startAdvertising : .stopAdvertising
        for id in ids {
            _ = try client.call(method, [.string(id)])
            printLine("\(id): \(state.rawValue)")
        }
    }
}
