// SPDX-License-Identifier: MIT

/// Hex-string decoding for `{"hex": "..."}` values.
///
/// Digits in any case; spaces, `:` and `-` may separate them anywhere (`"0a:1b"`,
/// `"0A 1B"`, `"0a1b"` are equal). An odd number of digits is an error.
enum HexBytes {
    static func decode(_ text: String) throws(ValueEncodingError) -> [UInt8] {
        var digits: [UInt8] = []
        for scalar in text.unicodeScalars {
            if scalar == " " || scalar == ":" || scalar == "-" { continue }
            guard scalar.isASCII, let digit = hexDigitValue(UInt8(scalar.value)) else {
                throw ValueEncodingError("invalid character \"\(scalar)\" in hex string")
            }
            digits.append(digit)
        }
        guard digits.count % 2 == 0 else {
            throw ValueEncodingError("odd number of hex digits (\(digits.count))")
        }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }
}
