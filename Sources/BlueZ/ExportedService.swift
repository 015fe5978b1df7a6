// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit

/// A `GattService1` object: static properties only.
final class ExportedService: DBusObject {
    let path: ObjectPath
    let definition: ServiceDefinition
    /// Paths of the included services, resolved by the application.
    var includes: [ObjectPath] = []
    /// The `Handle` requested and written back.
    let handles: HandleBook

    let interfaces = [GattInterfaces.service]

    /// `GattService1`'s properties, the one table its interface and values come from.
    static let properties: [PropertyRow<ExportedService>] = [
        PropertyRow(name: "UUID", signature: "s") { .string($0.definition.uuid.description) },
        PropertyRow(name: "Primary", signature: "b") { .bool($0.definition.primary) },
        PropertyRow(name: "Includes", signature: "ao") { .objectPathArray($0.includes) },
        PropertyRow(name: "Handle", signature: "q", access: .readwrite) {
            .uint16($0.handles.handle(.service, $0.definition.id))
        },
    ]

    init(path: ObjectPath, definition: ServiceDefinition, handles: HandleBook) {
        self.path = path
        self.definition = definition
        self.handles = handles
    }

    func property(_ name: String, interface: String) -> DBusValue? { Self.properties.value(of: name, for: self) }

    func isPropertyWritable(_ name: String, interface: String, by caller: String?) -> Bool {
        handles.isWritable(by: caller)
    }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        try handles.write(.service, definition.id, value)
    }
}
