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
        var pair = DBusMessageIter()
        dbus_message_iter_recurse(&entries, &pair)
        guard dbus_message_iter_get_arg_type(&pair) == TypeCode.string, dbus_message_iter_next(&pair) != 0,
            dbus_message_iter_get_arg_type(&pair) == TypeCode.variant
        else { throw notVariantDictionary }
        repeat {
            dbus_message_iter_recurse(&entries, &pair)
            var key: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&pair, &key)
            dbus_message_iter_next(&pair)
            var content = DBusMessageIter()
            dbus_message_iter_recurse(&pair, &content)
            guard dbus_message_iter_get_arg_type(&content) != TypeCode.invalid else { throw .invalidArgs("empty variant") }
            try body(key.map { String(cString: $0) } ?? "", try DBusValue(from: &content))
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
