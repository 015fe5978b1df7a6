// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import BLEModel
import DBusKit

/// `gattctl set ID VALUE`: sets a value as a program on the board.
struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set a characteristic's value; subscribed centrals are notified.",
        discussion: """
            VALUE is a typed value in JSON, as in the configuration file: '{"uint8": 42}', \
            '{"hex": "c0de"}', '{"utf8": "on"}', '[{"uint8": 0}, {"uint16": 72}]' (see \
            gattd.json(5) or config/README.md, "Typed values"). Instead of VALUE, give exactly one shortcut \
            option: --hex c0de, --utf8 text, --base64 …, or a number option such as --uint8 42, \
            --int16=-5, --sfloat 36.6 (numbers little-endian; negative numbers may also follow \
            a space).

            gattd applies the length rule a central's write meets (minLength...maxLength), \
            notifies subscribed centrals as a value-source tick does (an unchanged value is not \
            notified again), and answers once a persistent value is saved.

            --to ADDRESS[,ADDRESS...] sends the value to those subscribed centrals only, as a \
            notification or indication, and does not store it (other centrals neither get it \
            nor read it). Only through their own sockets: an acquireNotify characteristic on \
            BlueZ 5.79 or later. Where bluetoothd cannot target them (a shared socket as on \
            BlueZ 5.66, the signal path, a central without its own socket, one not connected \
            or not subscribed) gattd refuses with the reason and sends nothing (exit 5).

            \(ExitStatus.helpText)
            """)

    @Argument(help: "The characteristic's id, as in `gattctl list`.")
    var id: String

    @Argument(help: "The value as a JSON typed value (omit when a shortcut option is given).")
    var value: String?

    @Option(name: .long, help: "Send to these centrals only (addresses, comma-separated); the value is not stored.")
    var to: String?

    @Option(help: "Hex digits; spaces, ':' and '-' may separate them.")
    var hex: String?
    @Option(help: "UTF-8 text.")
    var utf8: String?
    @Option(help: "Base64 text.")
    var base64: String?
    @Option(parsing: .unconditional, help: "An unsigned 8-bit integer.")
    var uint8: String?
    @Option(parsing: .unconditional, help: "An unsigned 16-bit integer.")
    var uint16: String?
    @Option(parsing: .unconditional, help: "An unsigned 32-bit integer.")
    var uint32: String?
    @Option(parsing: .unconditional, help: "An unsigned 64-bit integer.")
    var uint64: String?
    @Option(parsing: .unconditional, help: "A signed 8-bit integer.")
    var int8: String?
    @Option(parsing: .unconditional, help: "A signed 16-bit integer.")
    var int16: String?
    @Option(parsing: .unconditional, help: "A signed 32-bit integer.")
    var int32: String?
    @Option(parsing: .unconditional, help: "A signed 64-bit integer.")
    var int64: String?
    @Option(parsing: .unconditional, help: "An IEEE 754 single-precision number.")
    var float32: String?
    @Option(parsing: .unconditional, help: "An IEEE 754 double-precision number.")
    var float64: String?
    @Option(parsing: .unconditional, help: "An IEEE 11073 16-bit SFLOAT (e.g. a temperature).")
    var sfloat: String?

    /// The shortcut options given, as (JSON key, text).
    private var shortcuts: [(String, String)] {
        let all: [(String, String?)] = [
            ("hex", hex), ("utf8", utf8), ("base64", base64), ("uint8", uint8), ("uint16", uint16),
            ("uint32", uint32), ("uint64", uint64), ("int8", int8), ("int16", int16), ("int32", int32),
            ("int64", int64), ("float32", float32), ("float64", float64), ("sfloat", sfloat),
        ]
        return all.compactMap { key, text in text.map { (key, $0) } }
    }

    func validate() throws {
        let count = shortcuts.count + (value == nil ? 0 : 1)
        guard count == 1 else {
            throw ValidationError(
                count == 0
                    ? "give the value: a JSON typed value or one option such as --hex or --uint8"
                    : "give the value once: either VALUE or one shortcut option")
        }
    }

    func run() throws {
        let bytes = try ValueInput.bytes(json: value, shortcut: shortcuts.first)
        let client = try ControlClient()
        if let to {
            let centrals = to.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            _ = try client.call(
                .setValueWithOptions,
                [.string(id), .bytes(bytes), ControlKey.dictionary([(.centrals, .stringArray(centrals))])])
            return
        }
        _ = try client.call(.setValue, [.string(id), .bytes(bytes)])
    }
}

/// Turns `gattctl set`'s VALUE or shortcut option into bytes with BLEModel's typed values.
enum ValueInput {
    static func bytes(json text: String?, shortcut: (String, String)?) throws(Failure) -> [UInt8] {
        let json: JSONValue
        if let text {
            do {
                json = try JSONParser.parse(text)
            } catch {
                throw Failure(.invalidValue, "VALUE is not valid JSON: \(error)")
            }
        } else if let shortcut {
            json = try shortcutValue(key: shortcut.0, text: shortcut.1)
        } else {
            throw Failure(.usage, "no value given")
        }
        switch TypedValue.decode(json, path: "value") {
        case .success(let bytes): return bytes
        case .failure(let errors):
            throw Failure(.invalidValue, errors.issues.map(\.description).joined(separator: "; "))
        }
    }

    /// `{"<key>": "<text>"}` for text kinds; `{"<key>": <number>}` for numbers, where the
    /// text must be one JSON number (nothing else is spliced into the document).
    private static func shortcutValue(key: String, text: String) throws(Failure) -> JSONValue {
        let member: JSONValue
        if ["hex", "utf8", "base64"].contains(key) {
            member = JSONValue(.string(text))
        } else {
            let parsed = try? JSONParser.parse(text)
            guard let parsed, case .number = parsed.kind else {
                throw Failure(.invalidValue, "--\(key) takes a number, got \"\(text)\"")
            }
            member = parsed
        }
        return JSONValue(.object([JSONMember(key: key, keyPosition: member.position, value: member)]))
    }
}
