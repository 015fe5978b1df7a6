// SPDX-License-Identifier: MIT

/// A validated D-Bus object path: `/`, or `/`-separated non-empty elements of
/// `[A-Za-z0-9_]`, no trailing `/`.
///
/// Holding an `ObjectPath` proves the string is valid, so it can reach libdbus (which
/// aborts the process on an invalid path) without another check.
public struct ObjectPath: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The path text.
    public let rawValue: String

    /// The root path `/`.
    public static let root = ObjectPath(unchecked: "/")

    /// Validates `rawValue`.
    /// - Throws: `InvalidArgs` naming the offending path.
    public init(_ rawValue: String) throws(DBusError) {
        guard ObjectPath.isValid(rawValue) else {
            throw .invalidArgs("invalid object path '\(rawValue)'")
        }
        self.rawValue = rawValue
    }

    /// A path from a literal; an invalid literal is a programmer error and traps.
    public init(stringLiteral value: String) {
        precondition(ObjectPath.isValid(value), "invalid object path literal '\(value)'")
        rawValue = value
    }

    init(unchecked rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// True when `self` is strictly below `ancestor` (`/a/b` is below `/a` and `/`, not below `/ab`).
    public func isDescendant(of ancestor: ObjectPath) -> Bool {
        if ancestor.rawValue == "/" { return rawValue != "/" }
        return rawValue.count > ancestor.rawValue.count && rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    /// The path with `element` appended; `element` must be a valid path element.
    public func appending(_ element: String) throws(DBusError) -> ObjectPath {
        try ObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// This path plus one element made from `id`, not yet in `used` (which receives it):
    /// the one place gattd turns configuration ids into object paths. Characters outside
    /// `[A-Za-z0-9_]` become `_` (an empty id gives `_`); when the result is taken,
    /// `_2`, `_3`, … is appended until it is not.
    public func appendingUniqueElement(for id: String, used: inout Set<ObjectPath>) -> ObjectPath {
        var element = String(
            String.UnicodeScalarView(
                id.unicodeScalars.map { scalar -> Unicode.Scalar in
                    switch scalar {
                    case "a"..."z", "A"..."Z", "0"..."9", "_": return scalar
                    default: return "_"
                    }
                }))
        if element.isEmpty { element = "_" }
        let prefix = rawValue == "/" ? "/" : rawValue + "/"
        var candidate = ObjectPath(unchecked: prefix + element)
        var suffix = 2
        while used.contains(candidate) {
            candidate = ObjectPath(unchecked: prefix + element + "_\(suffix)")
            suffix += 1
        }
        used.insert(candidate)
        return candidate
    }

    /// The elements of the path (`[]` for `/`).
    public var elements: [Substring] { rawValue.split(separator: "/") }

    /// Whether `string` is a valid object path (the D-Bus specification's rule).
    public static func isValid(_ string: String) -> Bool {
        let bytes = string.utf8
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var previousWasSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
                continue
            }
            previousWasSlash = false
            let ok = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
                || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_")
            if !ok { return false }
        }
        return !previousWasSlash
    }
}
