// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore

/// A `GattCharacteristic1` or `GattDescriptor1` object backed by one attribute of the
/// database. The two interfaces differ in their parent property (`Service` or
/// `Characteristic`), `Notifying`, the notify methods and, for a characteristic that uses
/// the socket path, `NotifyAcquired`/`WriteAcquired` and the `Acquire*` methods; each
/// kind's properties come from one table of rows.
final class ExportedAttribute: DBusObject {
    let path: ObjectPath
    let parentPath: ObjectPath
    let attribute: Attribute
    let flags: [String]
    unowned let requests: GattRequestHandler
    /// The `Handle` requested and written back.
    let handles: HandleBook
    let interfaces: [DBusInterface]
    /// This object's rows of `characteristicProperties` or `descriptorProperties`.
    private let rows: [PropertyRow<ExportedAttribute>]
    /// The `PropertiesChanged(Value)` notifications of a characteristic, prepared on first use.
    private var valueSignal: BytePropertySignal?

    /// `GattCharacteristic1`'s properties. `NotifyAcquired`/`WriteAcquired` are there only
    /// for a characteristic on the socket path (their presence is what bluetoothd looks
    /// at), true while a socket is acquired.
    static let characteristicProperties: [PropertyRow<ExportedAttribute>] = [
        PropertyRow(name: "UUID", signature: "s") { .string($0.attribute.uuid.description) },
        PropertyRow(name: "Service", signature: "o") { .objectPath($0.parentPath) },
        PropertyRow(name: "Flags", signature: "as") { .stringArray($0.flags) },
        // only to bluetoothd: see `isPropertyReadable`
        PropertyRow(name: "Value", signature: "ay") { .bytes($0.attribute.value) },
        PropertyRow(name: "Notifying", signature: "b") { .bool($0.attribute.isNotifying) },
        PropertyRow(name: "NotifyAcquired", signature: "b") { .bool($0.requests.sockets.hasSockets(.notify, $0.attribute)) },
        PropertyRow(name: "WriteAcquired", signature: "b") { .bool($0.requests.sockets.hasSockets(.write, $0.attribute)) },
        PropertyRow(name: "Handle", signature: "q", access: .readwrite) { .uint16($0.handles.handle(.characteristic, $0.attribute.id)) },
    ]

    /// `GattDescriptor1`'s properties.
    static let descriptorProperties: [PropertyRow<ExportedAttribute>] = [
        PropertyRow(name: "UUID", signature: "s") { .string($0.attribute.uuid.description) },
        PropertyRow(name: "Characteristic", signature: "o") { .objectPath($0.parentPath) },
        PropertyRow(name: "Flags", signature: "as") { .stringArray($0.flags) },
        PropertyRow(name: "Value", signature: "ay") { .bytes($0.attribute.value) },
        PropertyRow(name: "Handle", signature: "q", access: .readwrite) { .uint16($0.handles.handle(.descriptor, $0.attribute.id)) },
    ]

    /// A descriptor, or a characteristic using the socket `sockets` paths (empty: signals
    /// and `WriteValue` only).
    init(
        path: ObjectPath, parentPath: ObjectPath, attribute: Attribute, flags: [String],
        requests: GattRequestHandler, handles: HandleBook, sockets: AcquiredSockets.Kinds = []
    ) {
        self.handles = handles
        self.path = path
        self.parentPath = parentPath
        self.attribute = attribute
        self.flags = flags
        self.requests = requests
        if attribute.isCharacteristic {
            rows = Self.characteristicProperties.filter { row in
                switch row.name {
                case "NotifyAcquired": sockets.contains(.notify)
                case "WriteAcquired": sockets.contains(.write)
                default: true
                }
            }
            interfaces = [GattInterfaces.characteristic(rows: rows, sockets: sockets)]
        } else {
            rows = Self.descriptorProperties
            interfaces = [GattInterfaces.descriptor]
        }
    }

    /// Emits `value` as `PropertiesChanged(Value)` (a notification), to `destination` only
    /// (bluetoothd: nobody else on the bus may see the value).
    func notifyValue(_ value: [UInt8], on connection: BusConnection, to destination: String) throws(DBusError) {
        let signal: BytePropertySignal
        if let valueSignal {
            signal = valueSignal
        } else {
            signal = try BytePropertySignal(path: path, interface: interfaces[0].name, property: "Value")
            valueSignal = signal
        }
        try connection.emit(signal, carrying: value, to: destination)
    }

    func property(_ name: String, interface: String) -> DBusValue? { rows.value(of: name, for: self) }

    /// Only `Handle` is writable, and only by bluetoothd (its write-back).
    func isPropertyWritable(_ name: String, interface: String, by caller: String?) -> Bool {
        handles.isWritable(by: caller)
    }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        try handles.write(attribute.isCharacteristic ? .characteristic : .descriptor, attribute.id, value)
    }

    /// `Value` only for bluetoothd (the `org.bluez` owner): a local process must not read
    /// over D-Bus what a central may only read over an encrypted link. The rest is public.
    func isPropertyReadable(_ name: String, interface: String, by caller: String?) -> Bool {
        name != "Value" || (caller != nil && caller == requests.trustedSender)
    }
}
