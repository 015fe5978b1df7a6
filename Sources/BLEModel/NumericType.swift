// SPDX-License-Identifier: MIT

/// The numeric slot types of a typed value; the raw value is the JSON key.
///
/// All types are encoded little-endian. Integer types take exact integers only and check
/// their range exactly; `float32`/`float64` are IEEE 754; `sfloat` is IEEE 11073 SFLOAT.
public enum NumericType: String, CaseIterable, Sendable {
    case uint8, uint16, uint32, uint64
    case int8, int16, int32, int64
    case float32, float64, sfloat

    /// Encoded size in bytes.
    public var byteCount: Int {
        switch self {
        case .uint8, .int8: 1
        case .uint16, .int16, .sfloat: 2
        case .uint32, .int32, .float32: 4
        case .uint64, .int64, .float64: 8
        }
    }

    var isSigned: Bool { [.int8, .int16, .int32, .int64].contains(self) }
    var isInteger: Bool { ![.float32, .float64, .sfloat].contains(self) }

    /// `0...255` style range text for integer types.
    var rangeText: String {
        let bits = byteCount * 8
        if isSigned {
            return "\(Int64.min >> (64 - bits))...\(Int64.max >> (64 - bits))"
        }
        return "0...\(UInt64.max >> (64 - UInt64(bits)))"
    }

    /// Encodes a JSON number literal exactly (integers never pass through `Double`).
    public func encode(_ number: JSONNumber) throws(ValueEncodingError) -> [UInt8] {
        switch self {
        case .float32:
            guard let value = Float(number.literal), value.isFinite else {
                throw ValueEncodingError("\(number) is out of range for float32")
            }
            return littleEndian(UInt64(value.bitPattern))
        case .float64:
            let value = number.doubleValue
            guard value.isFinite else { throw ValueEncodingError("\(number) is out of range for float64") }
            return littleEndian(value.bitPattern)
        case .sfloat:
            guard let decimal = DecimalText(number.literal) else {
                throw ValueEncodingError("\(number) is not a number")
            }
            return littleEndian(UInt64(try SFloat.encode(decimal, text: number.literal)))
        default:
            guard number.isInteger else { throw ValueEncodingError("\(number) is not an integer") }
            if isSigned {
                guard let value = number.int64Value, fits(signed: value) else { throw outOfRange(number.literal) }
                return littleEndian(UInt64(bitPattern: value))
            }
            guard let value = number.uint64Value, fits(unsigned: value) else { throw outOfRange(number.literal) }
            return littleEndian(value)
        }
    }

    /// Encodes a runtime value: integer types round half away from zero, then range-check
    /// (out of range is an error, never a wrap); NaN is an error except for `sfloat` and the
    /// IEEE types.
    public func encode(_ value: Double) throws(ValueEncodingError) -> [UInt8] {
        switch self {
        case .float32:
            let single = Float(value)
            guard single.isFinite || !value.isFinite else { throw ValueEncodingError("\(value) is out of range for float32") }
            return littleEndian(UInt64(single.bitPattern))
        case .float64:
            return littleEndian(value.bitPattern)
        case .sfloat:
            return littleEndian(UInt64(try SFloat.encode(value)))
        default:
            guard value.isFinite else { throw ValueEncodingError("\(value) is not a finite number") }
            let rounded = value.rounded(.toNearestOrAwayFromZero)
            // The text of the error only: built when the value does not fit, not on every tick.
            func outOfRangeError() -> ValueEncodingError {
                outOfRange(
                    rounded == rounded.rounded(.towardZero) && abs(rounded) < 1e18 ? String(Int64(rounded)) : "\(value)")
            }
            if isSigned {
                guard rounded >= -9.223_372_036_854_775_808e18, rounded < 9.223_372_036_854_775_808e18,
                    fits(signed: Int64(rounded))
                else { throw outOfRangeError() }
                return littleEndian(UInt64(bitPattern: Int64(rounded)))
            }
            guard rounded >= 0, rounded < 1.844_674_407_370_955_161_6e19, fits(unsigned: UInt64(rounded)) else {
                throw outOfRangeError()
            }
            return littleEndian(UInt64(rounded))
        }
    }

    private func fits(signed value: Int64) -> Bool {
        let bits = byteCount * 8
        return value >= Int64.min >> (64 - bits) && value <= Int64.max >> (64 - bits)
    }

    private func fits(unsigned value: UInt64) -> Bool {
        value <= UInt64.max >> (64 - UInt64(byteCount * 8))
    }

    private func outOfRange(_ text: String) -> ValueEncodingError {
        ValueEncodingError("\(text) is out of range \(rangeText)")
    }

    private func littleEndian(_ value: UInt64) -> [UInt8] {
        (0..<byteCount).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
}
