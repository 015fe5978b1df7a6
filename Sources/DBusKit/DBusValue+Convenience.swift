// SPDX-License-Identifier: MIT

extension DBusValue {
    /// `as`.
    public static func stringArray(_ strings: [String]) -> DBusValue {
        .array(elementSignature: "s", strings.map { .string($0) })
    }

    /// `ao`.
    public static func objectPathArray(_ paths: [ObjectPath]) -> DBusValue {
        .array(elementSignature: "o", paths.map { .objectPath($0) })
    }

    /// `a{sv}` from ordered pairs; each value is wrapped in a variant here.
    public static func variantDictionary(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(
            keySignature: "s", valueSignature: "v",
            entries.map { DBusDictionaryEntry(key: .string($0.0), value: .variant($0.1)) }
        )
    }

    /// The value inside a variant, or the value itself when it is not a variant.
    public var unwrappedVariant: DBusValue {
        if case .variant(let inner) = self { return inner.unwrappedVariant }
        return self
    }

    public var asString: String? {
        if case .string(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asObjectPath: ObjectPath? {
        if case .objectPath(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asBool: Bool? {
        if case .bool(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asByte: UInt8? {
        if case .byte(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asUInt16: UInt16? {
        if case .uint16(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asInt16: Int16? {
        if case .int16(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asUInt32: UInt32? {
        if case .uint32(let value) = unwrappedVariant { return value }
        return nil
    }

    public var asInt32: Int32? {
        if case .int32(let value) = unwrappedVariant { return value }
        return nil
    }

    /// Bytes of an `ay` (also accepts a generic `array` of `byte`).
    public var asBytes: [UInt8]? {
        switch unwrappedVariant {
        case .bytes(let bytes): return bytes
        case .array("y", let elements):
            var bytes: [UInt8] = []
            bytes.reserveCapacity(elements.count)
            for element in elements {
                guard case .byte(let byte) = element else { return nil }
                bytes.append(byte)
            }
            return bytes
        default: return nil
        }
    }

    /// Elements of any array (`ay` yields `.byte` elements).
    public var asArray: [DBusValue]? {
        switch unwrappedVariant {
        case .array(_, let elements): return elements
        case .bytes(let bytes): return bytes.map { .byte($0) }
        default: return nil
        }
    }

    /// Strings of an `as`.
    public var asStringArray: [String]? {
        guard let elements = asArray else { return nil }
        var strings: [String] = []
        for element in elements {
            guard let string = element.asString else { return nil }
            strings.append(string)
        }
        return strings
    }

    /// Paths of an `ao`.
    public var asObjectPathArray: [ObjectPath]? {
        guard let elements = asArray else { return nil }
        var paths: [ObjectPath] = []
        for element in elements {
            guard let path = element.asObjectPath else { return nil }
            paths.append(path)
        }
        return paths
    }

    /// Entries of any dictionary, in wire order.
    public var dictionaryEntries: [DBusDictionaryEntry]? {
        if case .dictionary(_, _, let entries) = unwrappedVariant { return entries }
        return nil
    }

    /// Entries of an `a{sv}` as (name, unwrapped value) pairs in wire order; nil for any other type.
    public var variantDictionaryEntries: [(String, DBusValue)]? {
        guard case .dictionary("s", "v", let entries) = unwrappedVariant else { return nil }
        return entries.compactMap { entry in
            guard case .string(let key) = entry.key, case .variant(let value) = entry.value else { return nil }
            return (key, value)
        }
    }

    /// Looks up `key` in an `a{sv}` and returns the unwrapped value.
    public func variantDictionaryValue(_ key: String) -> DBusValue? {
        variantDictionaryEntries?.first { $0.0 == key }?.1
    }
}
