// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import DBusKit

/// `gattctl get ID`: one characteristic's current value.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print a characteristic's current value in hex and as UTF-8 text.",
        discussion: """
            Prints "hex 0x<digits>", "utf8 <quoted text>" ("(not UTF-8)" when the bytes are not \
            text) and, when the definition gives the value a type, "<type> <value>" (e.g. \
            "int16 2137"). With --json: {"id":…,"hex":…,"utf8":… or null}, plus "type" and \
            "typed" when there is a type.

            \(ExitStatus.helpText)
            """)

    @Argument(help: "The characteristic's id, as in `gattctl list`.")
    var id: String

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        let bytes = try client.call(.getValue, [.string(id)]).first?.asBytes ?? []
        let type =
            (try client.call(.listCharacteristics).first?.asArray ?? [])
            .compactMap { $0.variantDictionaryEntries.map(CharacteristicItem.init) }
            .first { $0.id == id }?.type ?? ""
        if json {
            printLine(
                JSONText.render(
                    .object(
                        [("id", .string(id))] + JSONText.valueMembers(bytes) + JSONText.typedMembers(bytes, type: type))))
        } else {
            var lines = [("hex", ValueText.hexNumber(bytes)), ("utf8", ValueText.quoted(bytes))]
            if let typed = ValueText.typed(bytes, as: type), type != "utf8" { lines.append((type, typed)) }
            for line in Columns.aligned(lines.map { [$0.0, $0.1] }) { printLine(line) }
        }
    }
}
