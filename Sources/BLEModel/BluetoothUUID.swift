// SPDX-License-Identifier: MIT

/// A Bluetooth UUID, always stored as its full 128 bits.
///
/// 16- and 32-bit UUIDs are aliases inside the Bluetooth Base UUID
/// `00000000-0000-1000-8000-00805F9B34FB` (Core Spec Vol 3 Part B §2.5.1), so `"180D"`,
/// `"0x180d"`, `"0000180D"` and `"0000180d-0000-1000-8000-00805f9b34fb"` are equal.
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible {
    /// The first 64 bits (big-endian reading order).
    public let high: UInt64
    /// The last 64 bits.
    public let low: UInt64

    static let baseHigh: UInt64 = 0x0000_0000_0000_1000
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(uuid16: UInt16) {
        self.init(uuid32: UInt32(uuid16))
    }

    public init(uuid32: UInt32) {
        self.init(high: UInt64(uuid32) << 32 | Self.baseHigh, low: Self.baseLow)
    }

    /// Parses `"180D"`, `"0x180D"`, `"0000180D"`, `"0x0000180D"` or the 36-character
    /// hyphenated 128-bit form, hex digits in any case. Returns nil for anything else.
    public init?(_ text: String) {
        var utf8 = Array(text.utf8)
        if utf8.count == 6 || utf8.count == 10, utf8[0] == UInt8(ascii: "0"),
            utf8[1] == UInt8(ascii: "x") || utf8[1] == UInt8(ascii: "X")
        {
            utf8.removeFirst(2)
        }
        switch utf8.count {
        case 4, 8:
            guard let value = Self.hexValue(utf8[...]) else { return nil }
            self.init(uuid32: UInt32(value))
        case 36:
            for dash in [8, 13, 18, 23] where utf8[dash] != UInt8(ascii: "-") { return nil }
            let digits = utf8.filter { $0 != UInt8(ascii: "-") }
            guard digits.count == 32, let high = Self.hexValue(digits[0..<16]),
                let low = Self.hexValue(digits[16..<32])
            else { return nil }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    private static func hexValue(_ digits: ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        for byte in digits {
            guard let digit = hexDigitValue(byte) else { return nil }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// The 32-bit alias when this UUID lies in the Bluetooth Base UUID range.
    public var uuid32: UInt32? {
        guard low == Self.baseLow, high & 0xFFFF_FFFF == Self.baseHigh else { return nil }
        return UInt32(high >> 32)
    }

    /// The 16-bit alias when this UUID lies in the Base UUID range and fits in 16 bits.
    public var uuid16: UInt16? {
        guard let value = uuid32, value <= 0xFFFF else { return nil }
        return UInt16(value)
    }

    /// Lowercase hyphenated 128-bit form, the spelling BlueZ reports and expects.
    /// Written digit by digit into the string's storage: it is on the state-saving path of
    /// every write, where building it from substrings cost about 48,000 instructions.
    public var description: String {
        String(unsafeUninitializedCapacity: 36) { utf8 in
            var position = 0
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    utf8[position] = UInt8(ascii: "-")
                    position += 1
                }
                let word = nibble < 16 ? high : low
                let digit = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (nibble % 16))) & 0xF
                utf8[position] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
                position += 1
            }
            return position
        }
    }

    /// `"180d"` for 16-bit aliases, `"0001180d"` for 32-bit ones, else the 128-bit form.
    /// Used to derive stable ids (`svc-180d`).
    public var shortForm: String {
        if let value = uuid16 { return lowercaseHex(UInt64(value), digits: 4) }
        if let value = uuid32 { return lowercaseHex(UInt64(value), digits: 8) }
        return description
    }

    /// Bytes needed in advertising data: 2, 4 or 16 (the smallest alias that represents it).
    public var byteWidth: Int {
        if uuid16 != nil { return 2 }
        if uuid32 != nil { return 4 }
        return 16
    }

    /// The UUID in little-endian byte order (as on air) at `width` bytes.
    /// - Precondition: `width` is 2, 4 or 16 and not smaller than `byteWidth`.
    public func littleEndianBytes(width: Int) -> [UInt8] {
        precondition([2, 4, 16].contains(width) && width >= byteWidth, "invalid UUID width \(width)")
        if width == 16 {
            return littleEndian(low, count: 8) + littleEndian(high, count: 8)
        }
        return littleEndian(high >> 32, count: width)
    }

    private func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private func lowercaseHex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
