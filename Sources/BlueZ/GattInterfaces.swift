// SPDX-License-Identifier: MIT

internal import DBusKit

/// Descriptions of the BlueZ server-side interfaces gattd implements
/// (docs/bluez-contract.md §2). Properties come from each object's table of rows
/// (`ExportedService.properties`, `ExportedAttribute.characteristicProperties`, ...).
enum GattInterfaces {
    static let service = DBusInterface(
        name: BlueZNames.gattService, methods: [], properties: ExportedService.properties.map(\.declaration))

    private static let characteristicMethods = [
        DBusMethod("ReadValue", inSignature: "a{sv}", outSignature: "ay"),
        DBusMethod("WriteValue", inSignature: "aya{sv}", outSignature: ""),
        DBusMethod("StartNotify", inSignature: "", outSignature: ""),
        DBusMethod("StopNotify", inSignature: "", outSignature: ""),
        DBusMethod("Confirm", inSignature: "", outSignature: ""),
    ]

    /// A characteristic's interface. `NotifyAcquired`/`WriteAcquired` and their methods
    /// are declared only for a characteristic that opted in (`acquireNotify`,
    /// `acquireWrite`): the mere presence of either property makes bluetoothd use
    /// `AcquireNotify`/`AcquireWrite` instead of `StartNotify`/`WriteValue`.
    static func characteristic(rows: [PropertyRow<ExportedAttribute>], sockets: AcquiredSockets.Kinds) -> DBusInterface {
        var methods = characteristicMethods
        if sockets.contains(.notify) {
            methods.append(DBusMethod("AcquireNotify", inSignature: "a{sv}", outSignature: "hq"))
        }
        if sockets.contains(.write) {
            methods.append(DBusMethod("AcquireWrite", inSignature: "a{sv}", outSignature: "hq"))
        }
        return DBusInterface(
            name: BlueZNames.gattCharacteristic, methods: methods, properties: rows.map(\.declaration), signals: [])
    }

    static let descriptor = DBusInterface(
        name: BlueZNames.gattDescriptor,
        methods: [
            DBusMethod("ReadValue", inSignature: "a{sv}", outSignature: "ay"),
            DBusMethod("WriteValue", inSignature: "aya{sv}", outSignature: ""),
        ],
        properties: ExportedAttribute.descriptorProperties.map(\.declaration),
        signals: [])
}
