// SPDX-License-Identifier: MIT

import BLEModel

/// How gattctl shows a value: hex digits, and the bytes as text when they are UTF-8.
enum ValueText {
    /// `"0a1bff"`; empty for no bytes (JSON output and `watch`'s lines).
    static func hex(_ bytes: [UInt8]) -> String { lowercaseHex(bytes) }

    /// `0x0a1bff` for people; `(empty)` for no bytes.
    static func hexNumber(_ bytes: [UInt8]) -> String { bytes.isEmpty ? "(empty)" : "0x" + lowercaseHex(bytes) }

    /// The value read as the definition's type (`2137` for an `int16`, `"on"` for `utf8`);
    /// nil when there is no type or the bytes do not fit it.
    static func typed(_ bytes: [UInt8], as type: String) -> String? {
        if type == "utf8" { return utf8(bytes) == nil ? nil : quoted(bytes) }
        return NumericType(rawValue: type)?.decode(bytes)
    }

    /// The typed reading when there is one, else the bytes as quoted text.
    static func shown(_ bytes: [UInt8], type: String) -> String { typed(bytes, as: type) ?? quoted(bytes) }

    /// The bytes as a string when they are valid UTF-8, else nil.
    static func utf8(_ bytes: [UInt8]) -> String? { String(validating: bytes, as: UTF8.self) }

    /// A double-quoted rendering for terminals: control characters, quotes and
    /// backslashes escaped (`"\u{0}H"`); `(not UTF-8)` when the bytes are not text.
    static func quoted(_ bytes: [UInt8]) -> String {
        guard let text = utf8(bytes) else { return "(not UTF-8)" }
        return doubleQuoted(text) { scalar in
            scalar.value < 0x20 || scalar.value == 0x7F ? "\\u{\(String(scalar.value, radix: 16))}" : nil
        }
    }
}
