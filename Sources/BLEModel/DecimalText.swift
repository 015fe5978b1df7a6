// SPDX-License-Identifier: MIT

/// An exact decimal `±digits × 10^exponent`, read from a JSON number literal or from
/// Swift's shortest `Double` description (`36.4`, `1e-05`, `5e+20`).
///
/// `digits` has no leading or trailing zeros; zero is the empty digit list.
struct DecimalText: Equatable {
    var negative: Bool
    var digits: [UInt8]
    var exponent: Int

    init(negative: Bool, digits: [UInt8], exponent: Int) {
        self.negative = negative
        self.digits = digits
        self.exponent = exponent
        normalize()
    }

    init?(_ text: String) {
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") {
            negative = bytes.first == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        var digits: [UInt8] = []
        var exponent = 0
        var sawDigit = false
        var afterPoint = false
        while let byte = bytes.first, byte != UInt8(ascii: "e"), byte != UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if byte == UInt8(ascii: ".") {
                guard !afterPoint else { return nil }
                afterPoint = true
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            sawDigit = true
            digits.append(byte - UInt8(ascii: "0"))
            if afterPoint { exponent -= 1 }
        }
        guard sawDigit else { return nil }
        if !bytes.isEmpty {
            bytes = bytes.dropFirst()  // e
            var exponentNegative = false
            if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") {
                exponentNegative = bytes.first == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            guard !bytes.isEmpty else { return nil }
            var value = 0
            for byte in bytes {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = min(value * 10 + Int(byte - UInt8(ascii: "0")), 1_000_000)  // clamp huge exponents
            }
            exponent += exponentNegative ? -value : value
        }
        self.init(negative: negative, digits: digits, exponent: exponent)
    }

    var isZero: Bool { digits.isEmpty }

    private mutating func normalize() {
        while digits.first == 0 { digits.removeFirst() }
        while digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty {
            exponent = 0
            negative = false
        }
    }

    /// Rounds half away from zero so that the exponent becomes at least `minimumExponent`.
    mutating func round(toExponent minimumExponent: Int) {
        guard exponent < minimumExponent else { return }
        let drop = minimumExponent - exponent
        if drop > digits.count {
            digits = []
        } else {
            let roundUp = digits[digits.count - drop] >= 5
            digits.removeLast(drop)
            if roundUp {
                var position = digits.count - 1
                while position >= 0 && digits[position] == 9 {
                    digits[position] = 0
                    position -= 1
                }
                if position >= 0 { digits[position] += 1 } else { digits.insert(1, at: 0) }
            }
        }
        exponent = minimumExponent
        normalize()
        if digits.isEmpty { exponent = 0 }
    }

    /// The magnitude of `digits` when it fits in 18 decimal digits, else nil.
    var magnitude: Int64? {
        guard digits.count <= 18 else { return nil }
        return digits.reduce(Int64(0)) { $0 * 10 + Int64($1) }
    }
}
