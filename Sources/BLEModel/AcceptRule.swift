// SPDX-License-Identifier: MIT

/// Which values a central may write to a characteristic, said in the definition
/// (`accept`): a range (`min`, `max`) or a list (`oneOf`) of numbers of the
/// characteristic's number type (its `value`, e.g. `{"int16": 2100}`).
///
/// A write whose resulting value is not one number of that type (its length differs) is
/// refused with 0x0D Invalid Attribute Value Length; a number outside the rule with
/// `error` (default 0x80). SFLOAT's special values (NaN, NRes, ±INFINITY) and float NaN
/// pass no rule. See config/README.md, "Accept rules".
public struct AcceptRule: Sendable, Equatable {
    /// One number of the rule's type, exact for integers.
    public enum Number: Sendable, Equatable, CustomStringConvertible {
        case signed(Int64)
        case unsigned(UInt64)
        case real(Double)

        public var description: String {
            switch self {
            case .signed(let value): String(value)
            case .unsigned(let value): String(value)
            case .real(let value):
                value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
            }
        }

        /// `self < other` for two numbers of the same type (the decoder makes them so).
        func isLess(than other: Number) -> Bool {
            switch (self, other) {
            case (.signed(let a), .signed(let b)): a < b
            case (.unsigned(let a), .unsigned(let b)): a < b
            case (.real(let a), .real(let b)): a < b
            default: false
            }
        }
    }

    public enum Condition: Sendable, Equatable {
        /// `min...max`; either end may be open.
        case range(min: Number?, max: Number?)
        case oneOf([Number])
    }

    public var type: NumericType
    public var condition: Condition
    /// What a central gets for a value the rule refuses (0x80...0x9F).
    public var error: GATTError

    /// The first application error (Core Spec Vol 3 Part F §3.4.1.1). The spec's own codes
    /// for this, 0x13 Value Not Allowed (ATT) and 0xFF Out of Range (CSS Part B §1.2), cannot
    /// be sent by an application through bluetoothd (docs/bluez-contract.md §4: it maps
    /// any other number to 0x0E).
    public static let defaultError = GATTError.application(0x80)

    public init(type: NumericType, condition: Condition, error: GATTError = Self.defaultError) {
        self.type = type
        self.condition = condition
        self.error = error
    }

    /// Why `value` is refused, or nil when the rule admits it.
    public func refusal(of value: [UInt8]) -> GATTError? {
        guard value.count == type.byteCount else { return .invalidAttributeValueLength }
        guard let number = type.number(value) else { return error }
        return admits(number) ? nil : error
    }

    public func admits(_ number: Number) -> Bool {
        switch condition {
        case .range(let minimum, let maximum):
            if let minimum, number.isLess(than: minimum) { return false }
            if let maximum, maximum.isLess(than: number) { return false }
            return true
        case .oneOf(let allowed):
            return allowed.contains { !$0.isLess(than: number) && !number.isLess(than: $0) }
        }
    }

    /// `10...30`, `≥ 10`, `one of 0, 1, 2` (for `--check`'s summary and logs).
    public var summary: String {
        let text =
            switch condition {
            case .range(let minimum?, let maximum?): "\(minimum)...\(maximum)"
            case .range(let minimum?, nil): ">= \(minimum)"
            case .range(nil, let maximum?): "<= \(maximum)"
            case .range(nil, nil): "any"
            case .oneOf(let allowed): "one of " + allowed.map(\.description).joined(separator: ", ")
            }
        return "\(type.rawValue) \(text), else 0x" + String(error.attCode, radix: 16)
    }
}

extension NumericType {
    /// The number little-endian `bytes` of exactly `byteCount` hold; nil for another length,
    /// for NaN and for SFLOAT's special values.
    public func number(_ bytes: [UInt8]) -> AcceptRule.Number? {
        guard bytes.count == byteCount else { return nil }
        var raw: UInt64 = 0
        for byte in bytes.reversed() { raw = raw << 8 | UInt64(byte) }
        let bits = UInt64(byteCount * 8)
        switch self {
        case .uint8, .uint16, .uint32, .uint64:
            return .unsigned(raw)
        case .int8, .int16, .int32, .int64:
            let shift = 64 - bits
            return .signed(Int64(bitPattern: raw << shift) >> Int64(shift))
        case .float32:
            let value = Double(Float(bitPattern: UInt32(raw)))
            return value.isNaN ? nil : .real(value)
        case .float64:
            let value = Double(bitPattern: raw)
            return value.isNaN ? nil : .real(value)
        case .sfloat:
            switch UInt16(raw) {
            case SFloat.nan, SFloat.notAtThisResolution, SFloat.positiveInfinity, SFloat.negativeInfinity:
                return nil
            default:
                guard let text = decode(bytes), let value = Double(text) else { return nil }
                return .real(value)
            }
        }
    }
}
