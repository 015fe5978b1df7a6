// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc

/// `PropertiesChanged(interface, {property: <ay>}, [])` for one byte-array property of one
/// object, prepared once and emitted again and again with new bytes: the notification path.
///
/// libdbus rewrites the message header's signature field after every top-level argument it
/// appends, so building this signal through its iterators costs ~75,000 instructions,
/// almost all in libdbus. Here the message is built that way once per value length (the
/// template); each emission copies the template (`dbus_message_copy`, a deep copy that gets
/// its own serial when sent) and overwrites the bytes of the copy's `ay` in place, ~7,000
/// instructions. The bytes are reached through `dbus_message_iter_get_fixed_array`, which
/// hands out a pointer into the message's own buffer; writing through it keeps every
/// offset, length and the signature as they were, because the length is the template's.
/// A value of another length builds a new template.
///
/// With a `destination` the signal is unicast: dbus-daemon delivers it to that connection
/// only, whatever match rules others have added (a broadcast `PropertiesChanged` reaches
/// every process on the bus that asks for it). A new destination builds a new template.
public final class BytePropertySignal {
    public let path: ObjectPath
    public let interface: String
    public let property: String
    /// The message built for values of `length` bytes, sent to `destination`.
    private var template: (message: Message, length: Int, destination: String?)?
    /// Templates built (the first value, and every change of length); for tests.
    public private(set) var templatesBuilt = 0

    /// - Throws: `InvalidArgs` for an invalid interface or property name.
    public init(path: ObjectPath, interface: String, property: String) throws(DBusError) {
        try Names.validateInterface(interface)
        try DBusValue.validateString(property)
        self.path = path
        self.interface = interface
        self.property = property
    }

    /// The signal carrying `bytes`, ready to send (no serial yet); addressed to
    /// `destination` (a bus name) when one is given, else broadcast.
    public func message(carrying bytes: [UInt8], to destination: String? = nil) -> Message {
        let template: Message
        if let prepared = self.template, prepared.length == bytes.count, prepared.destination == destination {
            template = prepared.message
        } else {
            template = build(bytes, destination: destination)
            self.template = (template, bytes.count, destination)
            templatesBuilt += 1
        }
        guard let copy = dbus_message_copy(template.raw) else {
            preconditionFailure("out of memory copying a D-Bus message")
        }
        let message = Message(taking: copy)
        if !bytes.isEmpty { overwriteValue(of: message, with: bytes) }
        return message
    }

    private func build(_ bytes: [UInt8], destination: String?) -> Message {
        guard let raw = dbus_message_new_signal(path.rawValue, Names.properties, Freedesktop.propertiesChanged) else {
            preconditionFailure("out of memory creating a D-Bus signal")
        }
        if let destination {
            guard dbus_message_set_destination(raw, destination) != 0 else {
                preconditionFailure("out of memory setting a D-Bus destination")
            }
        }
        let message = Message(taking: raw)
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        DBusValue.string(interface).append(to: &iter)
        DBusValue.withContainer(&iter, TypeCode.array, "{sv}") { array in
            DBusValue.withContainer(array, TypeCode.dictEntry, nil) { entry in
                DBusValue.string(property).append(to: entry)
                DBusValue.withContainer(entry, TypeCode.variant, "ay") { variant in
                    DBusValue.appendBytes(bytes, to: variant)
                }
            }
        }
        DBusValue.withContainer(&iter, TypeCode.array, "s") { _ in }
        return message
    }

    /// Walks `s a{sv} as` to the `ay` inside the variant and writes `bytes` over it.
    private func overwriteValue(of message: Message, with bytes: [UInt8]) {
        var top = DBusMessageIter()
        var entries = DBusMessageIter()
        var entry = DBusMessageIter()
        var variant = DBusMessageIter()
        var array = DBusMessageIter()
        precondition(dbus_message_iter_init(message.raw, &top) != 0)
        precondition(dbus_message_iter_next(&top) != 0)  // interface -> a{sv}
        dbus_message_iter_recurse(&top, &entries)
        dbus_message_iter_recurse(&entries, &entry)
        precondition(dbus_message_iter_next(&entry) != 0)  // key -> variant
        dbus_message_iter_recurse(&entry, &variant)
        dbus_message_iter_recurse(&variant, &array)
        var pointer: UnsafeRawPointer?
        var count: Int32 = 0
        dbus_message_iter_get_fixed_array(&array, &pointer, &count)
        guard let pointer, Int(count) == bytes.count else {
            preconditionFailure("PropertiesChanged template does not hold \(bytes.count) bytes")
        }
        bytes.withUnsafeBytes { source in
            UnsafeMutableRawPointer(mutating: pointer).copyMemory(from: source.baseAddress!, byteCount: bytes.count)
        }
    }
}

extension BusConnection {
    /// Emits `signal` carrying `bytes` (see `BytePropertySignal`), to `destination` only
    /// when one is given.
    public func emit(_ signal: BytePropertySignal, carrying bytes: [UInt8], to destination: String? = nil)
        throws(DBusError)
    {
        try send(signal.message(carrying: bytes, to: destination))
    }
}
