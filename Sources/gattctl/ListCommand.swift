// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import BLEModel
import DBusKit

/// `gattctl list`: every characteristic with its UUID, flags, value and subscription.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the characteristics: id, UUID, handle, flags, current value, subscribed or not.",
        discussion: """
            One line per characteristic, in aligned columns: id, short UUID, the ATT handle of \
            its value as bluetoothd has it (0x002a; "-" before the first registration), flags, \
            "subscribed" when a central receives its notifications, "notify-socket" or \
            "write-socket" when bluetoothd holds such a socket for it (with the count when more \
            than one: one per central on BlueZ 5.76+), and "persistent" when its value survives \
            restarts ("-" for none of these), the value in hex (0x...), and the value read as the \
            definition's type (2137 for an int16) or else as quoted UTF-8 text. With --json, one \
            JSON object per line ("type" and "typed" when the definition gives a type).

            \(ExitStatus.helpText)
            """)

    @Flag(name: .long, help: "One JSON object per characteristic and line.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        guard let entries = try client.call(.listCharacteristics).first?.asArray else {
            throw Failure(.refused, "ListCharacteristics returned no array")
        }
        let items = entries.compactMap { $0.variantDictionaryEntries.map(CharacteristicItem.init) }
        if json {
            for item in items { printLine(JSONText.render(item.json)) }
        } else {
            for line in Columns.aligned(items.map(\.columns)) { printLine(line) }
        }
    }
}

/// One entry of `ListCharacteristics`.
struct CharacteristicItem {
    var id = ""
    var service = ""
    var uuid = ""
    var flags: [String] = []
    var value: [UInt8] = []
    var notifying = false
    var persistent = false
    var type = ""
    var notifySockets = 0
    var writeSockets = 0
    var handle: UInt16 = 0

    init(_ fields: [(String, DBusValue)]) {
        for (name, value) in fields {
            switch ControlKey(rawValue: name) {
            case .id?: id = value.asString ?? ""
            case .service?: service = value.asString ?? ""
            case .uuid?: uuid = value.asString ?? ""
            case .flags?: flags = value.asStringArray ?? []
            case .value?: self.value = value.asBytes ?? []
            case .notifying?: notifying = value.asBool ?? false
            case .persistent?: persistent = value.asBool ?? false
            case .type?: type = value.asString ?? ""
            case .notifySockets?: notifySockets = Int(value.asUInt32 ?? 0)
            case .writeSockets?: writeSockets = Int(value.asUInt32 ?? 0)
            case .handle?: handle = value.asUInt16 ?? 0
            default: break
            }
        }
    }

    var shortUUID: String { BluetoothUUID(uuid)?.shortForm ?? uuid }

    var columns: [String] {
        func sockets(_ kind: String, _ count: Int) -> String? {
            count == 0 ? nil : count == 1 ? kind : "\(kind)=\(count)"
        }
        let state = [
            notifying ? "subscribed" : nil, sockets("notify-socket", notifySockets), sockets("write-socket", writeSockets),
            persistent ? "persistent" : nil,
        ].compactMap { $0 }
        return [
            id, shortUUID, handleText, flags.joined(separator: ","), state.isEmpty ? "-" : state.joined(separator: ","),
            ValueText.hexNumber(value), ValueText.shown(value, type: type),
        ]
    }

    /// `0x002a`, or `-` when bluetoothd has not placed it yet.
    var handleText: String {
        guard handle != 0 else { return "-" }
        let digits = String(handle, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    var json: JSONValue {
        .object(
            [
                ("id", .string(id)), ("service", .string(service)), ("uuid", .string(uuid)),
                ("flags", .array(flags.map { .string($0) })), ("subscribed", .bool(notifying)),
                ("persistent", .bool(persistent)), ("notifySockets", .number(notifySockets)),
                ("writeSockets", .number(writeSockets)), ("handle", .number(Int(handle))),
            ] + JSONText.valueMembers(value) + JSONText.typedMembers(value, type: type))
    }
}

/// Text columns padded to the widest cell, two spaces apart; the last column is not padded.
enum Columns {
    static func aligned(_ rows: [[String]]) -> [String] {
        let count = rows.map(\.count).max() ?? 0
        let widths = (0..<count).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }
    }
}
