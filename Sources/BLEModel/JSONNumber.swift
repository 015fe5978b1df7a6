// SPDX-License-Identifier: MIT

/// A JSON number kept as its literal text.
///
/// Integers are never routed through `Double`: `int64Value` and `uint64Value` are exact for
/// the whole `Int64` / `UInt64` range. The literal is always valid RFC 8259 number syntax
/// when it comes from `JSONParser`.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number exactly as written, e.g. `-12`, `36.40`, `1e3`.
    public let literal: String

    public init(literal: String) {
        self.literal = literal
    }

    /// True when the literal has neither a fraction nor an exponent.
    public var isInteger: Bool {
        !literal.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// The exact value when the literal is an integer within `Int64`, else nil.
    public var int64Value: Int64? { isInteger ? Int64(literal) : nil }

    /// The exact value when the literal is a non-negative integer within `UInt64`, else nil.
    public var uint64Value: UInt64? {
        guard isInteger, literal.first != "-" || literal == "-0" else { return nil }
        return UInt64(literal)
    }

    /// The nearest `Double` (infinite when the magnitude exceeds `Double`'s range).
    public var doubleValue: Double { Double(literal) ?? .nan }

    public var description: String { literal }
}
