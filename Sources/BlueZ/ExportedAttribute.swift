// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore

/// A `GattCharacteristic1` or `GattDescriptor1` object backed by one attribute of the
/// database. The two interfaces differ only in their parent property (`Service` or
/// `Characteristic`), `Notifying`, and the notify methods, which the interface
/// description carries.
final class ExportedAttribute: DBusObject {
    let path: ObjectPath
    let parentPath: ObjectPath
    let attribute: Attribute
    let flags: [String]
    unowned let requests: GattRequestHandler
    let interfaces: [DBusInterface]
    private let parentProperty: String
    /// The `PropertiesChanged(Value)` notifications of a characteristic, prepared on first use.
    private var valueSignal: BytePropertySignal?

    init(
        path: ObjectPath, parentPath: ObjectPath, attribute: Attribute, flags: [String],
        requests: GattRequestHandler
    ) {
        self.path = path
        self.parentPath = parentPath
        self.attribute = attribute
        self.flags = flags
        self.requests = requests
        if attribute.isCharacteristic {
            interfaces = [GattInterfaces.characteristic]
            parentProperty = "Service"
        } else {
            interfaces = [GattInterfaces.descriptor]
            parentProperty = "Characteristic"
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

    func property(_ name: String, interface: String) -> DBusValue? {
        switch name {
        case "UUID": return .string(attribute.uuid.description)
        case parentProperty: return .objectPath(parentPath)
        case "Flags": return .stringArray(flags)
        case "Value": return .bytes(attribute.value)  // only to bluetoothd: see `isPropertyReadable`
        case "Notifying" where attribute.isCharacteristic: return .bool(attribute.isNotifying)
        default: return nil
        }
    }

    /// `Value` only for bluetoothd (the `org.bluez` owner): a local process must not read
    /// over D-Bus what a central may only read over an encrypted link. The rest is public.
    func isPropertyReadable(_ name: String, interface: String, by caller: String?) -> Bool {
        name != "Value" || (caller != nil && caller == requests.trustedSender)
    }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        throw DBusError.propertyReadOnly("\(interface).\(name) is read-only")
    }

    func handle(_ call: MethodCall) {
        requests.handle(call, for: attribute, at: path)
    }
}
