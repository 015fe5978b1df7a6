// SPDX-License-Identifier: MIT

import BLEModel

/// gattctl's `--json` output: one object per line, keys in the given order, written by
/// BLEModel's one JSON writer (`JSONValue.canonicalText`).
enum JSONText {
    static func render(_ value: JSONValue) -> String { value.canonicalText }

    /// `"type"` and `"typed"` (the value read as that type, as text) when the definition
    /// gives a type and the bytes fit it; nothing otherwise.
    static func typedMembers(_ bytes: [UInt8], type: String) -> [(String, JSONValue)] {
        guard !type.isEmpty else { return [] }
        let typed = type == "utf8" ? ValueText.utf8(bytes) : ValueText.typed(bytes, as: type)
        return [("type", .string(type)), ("typed", typed.map { .string($0) } ?? .null)]
    }

    /// `{"hex": ..., "utf8": ... or null}` members for a value.
    static func valueMembers(_ bytes: [UInt8]) -> [(String, JSONValue)] {
        [("hex", .string(ValueText.hex(bytes))), ("utf8", ValueText.utf8(bytes).map { .string($0) } ?? .null)]
    }
}
