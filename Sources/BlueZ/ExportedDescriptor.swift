// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore

/// A `GattDescriptor1` object backed by one attribute of the database.
final class ExportedDescriptor: DBusObject {
    let path: ObjectPath
    let characteristicPath: ObjectPath
    let attribute: Attribute
    let flags: [String]
    unowned let requests: GattRequestHandler

    let interfaces = [GattInterfaces.descriptor]

    init(
        path: ObjectPath, characteristicPath: ObjectPath, attribute: Attribute, flags: [String],
        requests: GattRequestHandler
    ) {
        self.path = path
        self.characteristicPath = characteristicPath
        self.attribute = attribute
        self.flags = flags
        self.requests = requests
    }

    func property(_ name: String, interface: String) -> DBusValue? {
        switch name {
        case "UUID": return .string(attribute.uuid.description)
        case "Characteristic": return .objectPath(characteristicPath)
        case "Flags": return .stringArray(flags)
        case "Value": return .bytes(attribute.value)
        default: return nil
        }
    }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        throw DBusError.propertyReadOnly("\(interface).\(name) is read-only")
    }

    func handle(_ call: MethodCall) {
        requests.handle(call, for: attribute, at: path)
    }
}
