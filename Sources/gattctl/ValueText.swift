// SPDX-License-Identifier: MIT

import BLEModel

/// How gattctl shows a value: hex digits, and the bytes as text when they are UTF-8.
enum ValueText {
    /// `"0a1bff"`; empty for no bytes.
    static func hex(_ bytes: [UInt8]) -> String { lowercaseHex(bytes) }

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
