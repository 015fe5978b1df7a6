// SPDX-License-Identifier: MIT

/// IEEE 11073-20601 16-bit SFLOAT: a 4-bit signed exponent (high nibble) and a 12-bit
/// signed mantissa, value = mantissa × 10^exponent, stored little-endian.
///
/// Encoding picks the shortest exact form (trailing zeros move into the exponent:
/// `100` -> 1 × 10², `36.4` -> 364 × 10⁻¹). When no exact form exists the mantissa is
/// rounded half away from zero at the smallest exponent that fits (least loss). Magnitudes
/// above 2045 × 10⁷ are out of range; magnitudes below 0.5 × 10⁻⁸ round to 0.
enum SFloat {
    static let nan: UInt16 = 0x07FF
    static let notAtThisResolution: UInt16 = 0x0800
    static let positiveInfinity: UInt16 = 0x07FE
    static let negativeInfinity: UInt16 = 0x0802
    /// Largest mantissa magnitude; ±2046/±2047/-2048 are the reserved special values.
    static let maximumMantissa: Int64 = 2045

    /// The special value named by `text` (`NaN`, `NRes`, `INF`, `+INF`, `-INF`), if any.
    static func special(named text: String) -> UInt16? {
        switch text {
        case "NaN": nan
        case "NRes": notAtThisResolution
        case "INF", "+INF": positiveInfinity
        case "-INF": negativeInfinity
        default: nil
        }
    }

    static func encode(_ double: Double) throws(ValueEncodingError) -> UInt16 {
        if double.isNaN { return nan }
        if double.isInfinite { return double > 0 ? positiveInfinity : negativeInfinity }
        guard let decimal = DecimalText("\(double)") else { throw ValueEncodingError("\(double) is not a number") }
        return try encode(decimal, text: "\(double)")
    }

    static func encode(_ value: DecimalText, text: String) throws(ValueEncodingError) -> UInt16 {
        if value.isZero { return 0 }
        // Round once, from the original digits, to at most 4 significant digits and an
        // exponent of at least -8 (rounding twice could round 2.04449 up to 2.045).
        let target = max(value.exponent, -8, value.exponent + value.digits.count - 4)
        var decimal = value
        decimal.round(toExponent: target)
        if let magnitude = decimal.magnitude, magnitude > maximumMantissa {
            decimal = value
            decimal.round(toExponent: target + 1)
        }
        if decimal.isZero { return 0 }
        // Exponent above 7: move it into the mantissa.
        var mantissa = decimal.magnitude ?? Int64.max
        var exponent = decimal.exponent
        while exponent > 7 && mantissa <= maximumMantissa {
            mantissa *= 10
            exponent -= 1
        }
        guard mantissa <= maximumMantissa, exponent <= 7 else {
            throw ValueEncodingError("\(text) is out of range for sfloat (magnitude at most 2045e7)")
        }
        let signed = decimal.negative ? -mantissa : mantissa
        return UInt16(UInt8(bitPattern: Int8(exponent)) & 0x0F) << 12 | UInt16(UInt16(bitPattern: Int16(signed)) & 0x0FFF)
    }
}
