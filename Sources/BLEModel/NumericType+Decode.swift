// SPDX-License-Identifier: MIT

extension NumericType {
    /// The number `bytes` (little-endian, exactly `byteCount` long) hold, as decimal text;
    /// nil for another length. SFLOAT's special values read `NaN`, `NRes`, `+INFINITY`,
    /// `-INFINITY`.
    public func decode(_ bytes: [UInt8]) -> String? {
        guard bytes.count == byteCount else { return nil }
        let raw = bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let bits = UInt64(byteCount * 8)
        switch self {
        case .uint8, .uint16, .uint32, .uint64:
            return String(raw)
        case .int8, .int16, .int32, .int64:
            let shift = 64 - bits
            return String(Int64(bitPattern: raw << shift) >> Int64(shift))
        case .float32:
            return "\(Float(bitPattern: UInt32(raw)))"
        case .float64:
            return "\(Double(bitPattern: raw))"
        case .sfloat:
            switch UInt16(raw) {
            case SFloat.nan: return "NaN"
            case SFloat.notAtThisResolution: return "NRes"
            case SFloat.positiveInfinity: return "+INFINITY"
            case SFloat.negativeInfinity: return "-INFINITY"
            default:
                let mantissa = Int64(Int16(bitPattern: UInt16(raw) << 4) >> 4)
                let exponent = Int(Int8(bitPattern: UInt8(raw >> 12) << 4) >> 4)
                return Self.decimal(mantissa: mantissa, exponent: exponent)
            }
        }
    }

    /// `mantissa × 10^exponent` written out exactly: `215`, `-0.05`, `3600`.
    static func decimal(mantissa: Int64, exponent: Int) -> String {
        let sign = mantissa < 0 ? "-" : ""
        var digits = String(mantissa.magnitude)
        if exponent >= 0 { return sign + digits + String(repeating: "0", count: exponent) }
        let places = -exponent
        if digits.count <= places { digits = String(repeating: "0", count: places - digits.count + 1) + digits }
        let point = digits.index(digits.endIndex, offsetBy: -places)
        var fraction = String(digits[point...])
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return sign + digits[..<point] + (fraction.isEmpty ? "" : "." + fraction)
    }
}
