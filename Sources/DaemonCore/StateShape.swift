// SPDX-License-Identifier: MIT

internal import BLEModel

/// Shape checks for the state file decoder; every failure names its JSON path.
enum StateShape {
    static func object(_ value: JSONValue, path: String) throws(StateDecodingError) -> [JSONMember] {
        guard let members = value.objectValue else {
            throw StateDecodingError(.shape, path: path, message: "expected an object, found \(value.typeName)")
        }
        return members
    }

    static func onlyKeys(_ members: [JSONMember], _ allowed: Set<String>, path: String) throws(StateDecodingError) {
        for member in members where !allowed.contains(member.key) {
            throw StateDecodingError(.shape, path: field(path, member.key), message: "unknown key")
        }
    }

    static func required(_ object: JSONValue, _ key: String, _ path: String) throws(StateDecodingError) -> JSONValue {
        guard let value = object[key] else {
            throw StateDecodingError(.shape, path: field(path, key), message: "missing")
        }
        return value
    }

    static func string(_ value: JSONValue, path: String) throws(StateDecodingError) -> String {
        guard let text = value.stringValue else {
            throw StateDecodingError(.shape, path: path, message: "expected a string, found \(value.typeName)")
        }
        return text
    }

    static func integer(_ value: JSONValue, path: String) throws(StateDecodingError) -> Int64 {
        guard let number = value.numberValue, let integer = number.int64Value else {
            let found = value.numberValue.map { "number \($0.literal)" } ?? value.typeName
            throw StateDecodingError(.shape, path: path, message: "expected an integer, found \(found)")
        }
        return integer
    }

    static func length(_ value: JSONValue, path: String) throws(StateDecodingError) -> Int {
        let integer = try integer(value, path: path)
        guard (0...512).contains(integer) else {
            throw StateDecodingError(.shape, path: path, message: "length \(integer) is outside 0...512")
        }
        return Int(integer)
    }

    /// Lowercase or uppercase hex digits only, an even number of them.
    static func hexBytes(_ text: String, path: String) throws(StateDecodingError) -> [UInt8] {
        var bytes: [UInt8] = []
        var high: UInt8?
        for unit in text.utf8 {
            guard let digit = hexValue(unit) else {
                throw StateDecodingError(.shape, path: path, message: "invalid hex digit in \"\(text)\"")
            }
            if let first = high {
                bytes.append(first << 4 | digit)
                high = nil
            } else {
                high = digit
            }
        }
        guard high == nil else {
            throw StateDecodingError(.shape, path: path, message: "odd number of hex digits")
        }
        return bytes
    }

    /// `id -> T` for an optional object section; a missing section is empty.
    static func entries<T>(
        _ value: JSONValue?, path: String, _ decode: (JSONValue, String) throws(StateDecodingError) -> T
    ) throws(StateDecodingError) -> [String: T] {
        guard let value else { return [:] }
        var result: [String: T] = [:]
        for member in try object(value, path: path) {
            result[member.key] = try decode(member.value, entry(path, member.key))
        }
        return result
    }

    /// `characteristics.label`-style field access; a bare key at the top.
    static func field(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : path + "." + key
    }

    /// `characteristics["label"]`: ids may contain dots, so they are quoted.
    static func entry(_ path: String, _ id: String) -> String {
        path + "[\"" + id + "\"]"
    }

    private static func hexValue(_ unit: UInt8) -> UInt8? {
        switch unit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): unit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): unit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): unit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
