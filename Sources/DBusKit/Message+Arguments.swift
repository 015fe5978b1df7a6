// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc

// Typed access to single arguments, for hot paths that know their signature: no
// intermediate `DBusValue` tree, no signature strings, one array allocation at most.

extension Message {
    /// Argument `index` (from 0), an `a{sv}`, as (key, variant content) pairs in wire order.
    ///
    /// Gives exactly what `arguments()[index].variantDictionaryEntries` gives, without
    /// building the dictionary: a basic value inside a variant is read straight from the
    /// message; only container contents go through the generic decoder.
    /// - Throws: `InvalidArgs` when there is no argument `index` or it is not an `a{sv}`.
    public func variantDictionary(at index: Int) throws(DBusError) -> [(String, DBusValue)] {
        var result: [(String, DBusValue)] = []
        try forEachVariantDictionaryEntry(at: index) { key, value throws(DBusError) in result.append((key, value)) }
        return result
    }

    /// Calls `body` with each (key, variant content) pair of argument `index`, an `a{sv}`,
    /// in wire order, without collecting them: the cheapest way to read bluetoothd's options.
    /// An error thrown by `body` stops the walk and is rethrown.
    /// - Throws: `InvalidArgs` when there is no argument `index` or it is not an `a{sv}`
    ///   (before `body` sees anything).
    public func forEachVariantDictionaryEntry(
        at index: Int, _ body: (String, DBusValue) throws(DBusError) -> Void
    ) throws(DBusError) {
        var iter = DBusMessageIter()
        guard Self.seek(raw, to: index, &iter) else { throw .invalidArgs("no argument \(index)") }
        try DBusValue.decodeVariantDictionary(&iter, body)
    }

    /// Calls `body` with each entry of argument `index`, an `a{sv}`, in wire order, read in
    /// place: the key stays libdbus's C string and a basic content is read only when `body`
    /// asks for it with the type it expects; `VariantEntry.decoded()` gives what
    /// `forEachVariantDictionaryEntry(at:_:)` would. The ReadValue/WriteValue hot path.
    /// - Throws: as `forEachVariantDictionaryEntry(at:_:)`.
    public func forEachVariantEntry(
        at index: Int, _ body: (borrowing VariantEntry) throws(DBusError) -> Void
    ) throws(DBusError) {
        var iter = DBusMessageIter()
        guard Self.seek(raw, to: index, &iter) else { throw .invalidArgs("no argument \(index)") }
        try DBusValue.walkVariantDictionary(&iter) { key, content, type throws(DBusError) in
            try body(VariantEntry(key: key, content: content, type: type))
        }
    }

    /// Argument `index` (from 0), an `ay`, copied out in one block.
    /// - Throws: `InvalidArgs` when there is no argument `index` or it is not an `ay`.
    public func bytes(at index: Int) throws(DBusError) -> [UInt8] {
        var iter = DBusMessageIter()
        guard Self.seek(raw, to: index, &iter) else { throw .invalidArgs("no argument \(index)") }
        guard dbus_message_iter_get_arg_type(&iter) == TypeCode.array,
            dbus_message_iter_get_element_type(&iter) == TypeCode.byte
        else { throw .invalidArgs("argument \(index) is not of type ay") }
        return DBusValue.decodeBytes(&iter)
    }

    /// Points `iter` at argument `index`; false when the body is shorter.
    private static func seek(_ raw: OpaquePointer, to index: Int, _ iter: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
        guard index >= 0, dbus_message_iter_init(raw, iter) != 0 else { return false }
        var position = 0
        while position < index {
            guard dbus_message_iter_next(iter) != 0 else { return false }
            position += 1
        }
        return dbus_message_iter_get_arg_type(iter) != TypeCode.invalid
    }
}

extension DBusValue {
    /// Walks the `a{sv}` at `iter`, handing each (key, variant content) pair to `body`.
    static func decodeVariantDictionary(
        _ iter: UnsafeMutablePointer<DBusMessageIter>, _ body: (String, DBusValue) throws(DBusError) -> Void
    ) throws(DBusError) {
        try walkVariantDictionary(iter) { key, content, _ throws(DBusError) in
            try body(String(cString: key), try DBusValue(from: content))
        }
    }

    /// Walks the `a{sv}` at `iter`, handing each key, an iterator at its variant's
    /// (non-empty) content and that content's type code to `body`.
    static func walkVariantDictionary(
        _ iter: UnsafeMutablePointer<DBusMessageIter>,
        _ body: (UnsafePointer<CChar>, UnsafeMutablePointer<DBusMessageIter>, Int32) throws(DBusError) -> Void
    ) throws(DBusError) {
        let notVariantDictionary = DBusError.invalidArgs("argument is not of type a{sv}")
        guard dbus_message_iter_get_arg_type(iter) == TypeCode.array,
            dbus_message_iter_get_element_type(iter) == TypeCode.dictEntry
        else { throw notVariantDictionary }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(iter, &entries)
        guard dbus_message_iter_get_arg_type(&entries) == TypeCode.dictEntry else {
            // Empty: only the signature says whether it is an a{sv}.
            guard let signature = dbus_message_iter_get_signature(iter) else { throw notVariantDictionary }
            defer { dbus_free(signature) }
            guard strcmp(signature, "a{sv}") == 0 else { throw notVariantDictionary }
            return
        }
        // Every entry has the array's element type, so the first one settles it.
        var checked = false
        var pair = DBusMessageIter()
        repeat {
            dbus_message_iter_recurse(&entries, &pair)
            guard checked || dbus_message_iter_get_arg_type(&pair) == TypeCode.string else { throw notVariantDictionary }
            var key: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&pair, &key)
            let hasValue = dbus_message_iter_next(&pair) != 0
            if !checked {
                guard hasValue, dbus_message_iter_get_arg_type(&pair) == TypeCode.variant else { throw notVariantDictionary }
                checked = true
            }
            var content = DBusMessageIter()
            dbus_message_iter_recurse(&pair, &content)
            let type = dbus_message_iter_get_arg_type(&content)
            guard type != TypeCode.invalid else { throw .invalidArgs("empty variant") }
            guard let key else { throw .invalidArgs("dictionary entry without a key") }  // libdbus always has one
            try body(key, &content, type)
        } while dbus_message_iter_next(&entries) != 0
    }

    /// Copies the `ay` at `iter` (whose element type is byte).
    static func decodeBytes(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> [UInt8] {
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(iter, &sub)
        var pointer: UnsafeRawPointer?
        var count: Int32 = 0
        dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }
}

/// One entry of an `a{sv}` during `Message.forEachVariantEntry(at:_:)`; valid only during
/// that call. The typed readers give nil unless the variant holds that type directly (a
/// variant inside the variant, say, gives nil: `decoded()` unwraps it as the generic path does).
public struct VariantEntry: ~Copyable {
    /// The key, libdbus's C string.
    public let key: UnsafePointer<CChar>
    let content: UnsafeMutablePointer<DBusMessageIter>
    /// The content's type code, as the walk read it.
    private let type: Int32

    init(key: UnsafePointer<CChar>, content: UnsafeMutablePointer<DBusMessageIter>, type: Int32) {
        self.key = key
        self.content = content
        self.type = type
    }

    /// Whether the key is `name` (compared as C strings, no Swift string made).
    public func keyIs(_ name: StaticString) -> Bool {
        strcmp(key, UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
    }

    /// The content as a `q`.
    public var uint16: UInt16? {
        guard type == TypeCode.uint16 else { return nil }
        var basic = DBusBasicValue()
        dbus_message_iter_get_basic(content, &basic)
        return basic.u16
    }

    /// The content as a `b`.
    public var bool: Bool? {
        guard type == TypeCode.boolean else { return nil }
        var basic = DBusBasicValue()
        dbus_message_iter_get_basic(content, &basic)
        return basic.bool_val != 0
    }

    /// The content as an `s`; `previous` itself when it is equal (no new string).
    public func string(reusing previous: String? = nil) -> String? {
        guard type == TypeCode.string else { return nil }
        return text(reusing: previous)
    }

    /// The content as an `o`, its path as a string; `previous` itself when it is equal.
    public func objectPath(reusing previous: String? = nil) -> String? {
        guard type == TypeCode.objectPath else { return nil }
        return text(reusing: previous)
    }

    private func text(reusing previous: String?) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(content, &pointer)
        guard let pointer else { return "" }
        if var previous,
            previous.withUTF8({ $0.count == strlen(pointer) && ($0.isEmpty || memcmp($0.baseAddress!, pointer, $0.count) == 0) })
        {
            return previous
        }
        return String(cString: pointer)
    }

    /// The key and content as `Message.forEachVariantDictionaryEntry(at:_:)` gives them.
    public func decoded() throws(DBusError) -> (String, DBusValue) {
        (String(cString: key), try DBusValue(from: content))
    }
}
