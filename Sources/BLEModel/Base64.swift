// SPDX-License-Identifier: MIT

/// Standard-alphabet base64 (RFC 4648 §4) decoding.
///
/// Padding is optional, but when present it must complete the last 4-character group.
/// No whitespace, no URL-safe alphabet, and the unused bits of the last character must
/// be zero (so every byte string has exactly one accepted spelling besides padding).
enum Base64 {
    static func decode(_ text: String) throws(ValueEncodingError) -> [UInt8] {
        var symbols: [UInt8] = []
        var padding = 0
        for (offset, byte) in text.utf8.enumerated() {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0 else { throw ValueEncodingError("'=' padding must be at the end (offset \(offset))") }
            guard let value = sextet(byte) else {
                throw ValueEncodingError("invalid base64 character at offset \(offset)")
            }
            symbols.append(value)
        }
        if padding > 0 && ((symbols.count + padding) % 4 != 0 || padding > 2) {
            throw ValueEncodingError("incorrect '=' padding")
        }
        guard symbols.count % 4 != 1 else { throw ValueEncodingError("truncated base64 (\(symbols.count) characters)") }
        var output: [UInt8] = []
        output.reserveCapacity(symbols.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for value in symbols {
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        if accumulator & ((1 << UInt32(bits)) - 1) != 0 {
            throw ValueEncodingError("non-zero bits after the last byte")
        }
        return output
    }

    private static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
