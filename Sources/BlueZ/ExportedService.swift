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

    /// `GattService1`'s properties, the one table its interface and values come from.
    static let properties: [PropertyRow<ExportedService>] = [
        PropertyRow(name: "UUID", signature: "s") { .string($0.definition.uuid.description) },
        PropertyRow(name: "Primary", signature: "b") { .bool($0.definition.primary) },
        PropertyRow(name: "Includes", signature: "ao") { .objectPathArray($0.includes) },
    ]

    init(path: ObjectPath, definition: ServiceDefinition) {
        self.path = path
        self.definition = definition
    }

    func property(_ name: String, interface: String) -> DBusValue? { Self.properties.value(of: name, for: self) }
}
