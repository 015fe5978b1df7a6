// SPDX-License-Identifier: MIT

import ArgumentParser
import BLEModel
import DBusKit

/// `gattctl list`: every characteristic with its UUID, flags, value and subscription.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the characteristics: id, UUID, flags, current value, subscribed or not.",
        discussion: """
            One line per characteristic: id, short UUID, flags, "subscribed" when a central \
            receives its notifications, "persistent" when its value survives restarts, then the \
            value in hex and as UTF-8 text. With --json, one JSON object per line.

            \(ExitStatus.helpText)
            """)

    @Flag(name: .long, help: "One JSON object per characteristic and line.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        guard let entries = try client.call("ListCharacteristics").first?.asArray else {
            throw Failure(.refused, "ListCharacteristics returned no array")
        }
        for entry in entries {
            guard let fields = entry.variantDictionaryEntries else { continue }
            let item = CharacteristicItem(fields)
            printLine(json ? JSONText.render(item.json) : item.line)
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

    init(_ fields: [(String, DBusValue)]) {
        for (name, value) in fields {
            switch name {
            case "Id": id = value.asString ?? ""
            case "Service": service = value.asString ?? ""
            case "UUID": uuid = value.asString ?? ""
            case "Flags": flags = value.asStringArray ?? []
            case "Value": self.value = value.asBytes ?? []
            case "Notifying": notifying = value.asBool ?? false
            case "Persistent": persistent = value.asBool ?? false
            default: break
            }
        }
    }

    var shortUUID: String { BluetoothUUID(uuid)?.shortForm ?? uuid }

    var line: String {
        var columns = [id, shortUUID, flags.joined(separator: ",")]
        if notifying { columns.append("subscribed") }
        if persistent { columns.append("persistent") }
        columns.append(ValueText.hex(value).isEmpty ? "(empty)" : ValueText.hex(value))
        columns.append(ValueText.quoted(value))
        return columns.joined(separator: "  ")
    }

    var json: JSONText.Value {
        .object(
            [
                ("id", .string(id)), ("service", .string(service)), ("uuid", .string(uuid)),
                ("flags", .array(flags.map { .string($0) })), ("subscribed", .bool(notifying)),
                ("persistent", .bool(persistent)),
            ] + JSONText.valueMembers(value))
    }
}
