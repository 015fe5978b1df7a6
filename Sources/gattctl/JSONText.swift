// SPDX-License-Identifier: MIT

import BLEModel

/// Minimal JSON writing for `--json` output: one object per line, keys in the given order.
enum JSONText {
    /// A JSON value to write.
    indirect enum Value {
        case string(String)
        case number(Int)
        case bool(Bool)
        case null
        case array([Value])
        case object([(String, Value)])
    }

    static func render(_ value: Value) -> String {
        switch value {
        case .string(let text): return quote(text)
        case .number(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        case .array(let items): return "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { quote($0.0) + ":" + render($0.1) }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal (RFC 8259 escapes).
    static func quote(_ text: String) -> String { jsonQuoted(text) }

    /// `"type"` and `"typed"` (the value read as that type, as text) when the definition
    /// gives a type and the bytes fit it; nothing otherwise.
    static func typedMembers(_ bytes: [UInt8], type: String) -> [(String, Value)] {
        guard !type.isEmpty else { return [] }
        let typed = type == "utf8" ? ValueText.utf8(bytes) : ValueText.typed(bytes, as: type)
        return [("type", .string(type)), ("typed", typed.map { .string($0) } ?? .null)]
    }

    /// `{"hex": ..., "utf8": ... or null}` members for a value.
    static func valueMembers(_ bytes: [UInt8]) -> [(String, Value)] {
        [("hex", .string(ValueText.hex(bytes))), ("utf8", ValueText.utf8(bytes).map { .string($0) } ?? .null)]
    }
}
