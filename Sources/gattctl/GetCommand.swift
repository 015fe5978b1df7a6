// SPDX-License-Identifier: MIT

import ArgumentParser
import DBusKit

/// `gattctl get ID`: one characteristic's current value.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print a characteristic's current value in hex and as UTF-8 text.",
        discussion: """
            Prints two lines, "hex <digits>" and "utf8 <quoted text>" ("(not UTF-8)" when the \
            bytes are not text). With --json: {"id":…,"hex":…,"utf8":… or null}.

            \(ExitStatus.helpText)
            """)

    @Argument(help: "The characteristic's id, as in `gattctl list`.")
    var id: String

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        let bytes = try client.call("GetValue", [.string(id)]).first?.asBytes ?? []
        if json {
            printLine(JSONText.render(.object([("id", .string(id))] + JSONText.valueMembers(bytes))))
        } else {
            printLine("hex   \(ValueText.hex(bytes))")
            printLine("utf8  \(ValueText.quoted(bytes))")
        }
    }
}
