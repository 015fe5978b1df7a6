// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit

/// A `GattService1` object: static properties only.
final class ExportedService: DBusObject {
    let path: ObjectPath
    let definition: ServiceDefinition
    /// Paths of the included services, resolved by the application.
    var includes: [ObjectPath] = []

    let interfaces = [GattInterfaces.service]

    init(path: ObjectPath, definition: ServiceDefinition) {
        self.path = path
        self.definition = definition
    }

    func property(_ name: String, interface: String) -> DBusValue? {
        switch name {
        case "UUID": return .string(definition.uuid.description)
        case "Primary": return .bool(definition.primary)
        case "Includes": return .objectPathArray(includes)
        default: return nil
        }
    }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        throw DBusError.propertyReadOnly("\(interface).\(name) is read-only")
    }

    func handle(_ call: MethodCall) {
        call.fail(DBusError.unknownMethod("No method \(call.member ?? "")"))
    }
}
