// SPDX-License-Identifier: MIT

/// A BlueZ release as `bluetoothd --version` prints it (`5.82`).
public struct BlueZVersion: Comparable, Hashable, Sendable, CustomStringConvertible {
    public let major: Int
    public let minor: Int

    public init(_ major: Int, _ minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// `5.82` (surrounding white space allowed); nil for anything else, e.g. an
    /// interpreter's `Python 3.11.2`.
    public init?(parsing text: String) {
        let trimmed = text.split(whereSeparator: { $0.isWhitespace })
        guard trimmed.count == 1 else { return nil }
        let parts = trimmed[0].split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = Int(parts[0]), let minor = Int(parts[1]), major >= 0, minor >= 0,
            parts.allSatisfy({ $0.allSatisfy(\.isASCII) && !$0.isEmpty })
        else { return nil }
        self.init(major, minor)
    }

    public static func < (lhs: BlueZVersion, rhs: BlueZVersion) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }

    public var description: String { "\(major).\(minor)" }
}

/// The kernel's release string (`uname -r`: `6.12.93+rpt-rpi-v8`) and its leading
/// `major.minor.patch` numbers.
public struct KernelRelease: Hashable, Sendable, CustomStringConvertible {
    public let text: String
    /// `[6, 12, 93]` for `6.12.93+rpt-rpi-v8`; empty when the text starts with no number.
    public let numbers: [Int]

    public init(_ text: String) {
        self.text = text
        var numbers: [Int] = []
        var current = ""
        for character in text {
            if character.isASCII, character.isNumber {
                current.append(character)
            } else if character == ".", !current.isEmpty {
                numbers.append(Int(current) ?? 0)
                current = ""
            } else {
                break
            }
        }
        if !current.isEmpty { numbers.append(Int(current) ?? 0) }
        self.numbers = numbers
    }

    /// True when the release's numbers are exactly `version` (`"6.12.93"` matches
    /// `6.12.93+rpt-rpi-v8` and `6.12.93-1`, not `6.12.9` or `6.12.930`).
    public func isVersion(_ version: String) -> Bool {
        numbers.map(String.init).joined(separator: ".") == version
    }

    public var description: String { text }
}
