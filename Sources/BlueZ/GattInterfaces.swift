// SPDX-License-Identifier: MIT

internal import DBusKit
internal import DaemonCore

/// Descriptions of the BlueZ server-side interfaces gattd implements
/// (docs/bluez-contract.md §2). Properties come from each object's table of rows
/// (`ExportedService.properties`, `ExportedAttribute.characteristicProperties`, ...).
enum GattInterfaces {
    static let service = DBusInterface(
        name: BlueZNames.gattService, methods: [], properties: ExportedService.properties.map(\.declaration))

    /// Every method of a characteristic or descriptor, each written once: name,
    /// signatures, and the `GattRequestHandler` step it runs.
    private static let readValue = row("ReadValue", in: "a{sv}", out: "ay") { handler, call, attribute throws(DBusError) in
        try handler.read(call, attribute)
    }
    private static let writeValue = row("WriteValue", in: "aya{sv}") { handler, call, attribute throws(DBusError) in
        try handler.write(call, attribute)
    }
    private static let startNotify = row("StartNotify") { $0.notify($1, $2, on: true) }
    private static let stopNotify = row("StopNotify") { $0.notify($1, $2, on: false) }
    private static let confirm = row("Confirm") { $0.confirm($1, $2) }
    private static let acquireNotify = row("AcquireNotify", in: "a{sv}", out: "hq") { handler, call, attribute throws(DBusError) in
        try handler.acquire(call, attribute, .notify)
    }
    private static let acquireWrite = row("AcquireWrite", in: "a{sv}", out: "hq") { handler, call, attribute throws(DBusError) in
        try handler.acquire(call, attribute, .write)
    }

    private static let characteristicMethods = [readValue, writeValue, startNotify, stopNotify, confirm]

    /// A method of an `ExportedAttribute` run by its `GattRequestHandler` (which refuses
    /// callers other than bluetoothd and answers a malformed call).
    private static func row(
        _ name: String, in inSignature: String = "", out outSignature: String = "",
        _ step: @escaping @Sendable (GattRequestHandler, MethodCall, Attribute) throws(DBusError) -> Void
    ) -> DBusMethod {
        DBusMethod(name, inSignature: inSignature, outSignature: outSignature) { (object: ExportedAttribute, call) in
            object.requests.serve(call, object.attribute, step)
        }
    }

    /// A characteristic's interface. `NotifyAcquired`/`WriteAcquired` and their methods
    /// are declared only for a characteristic that opted in (`acquireNotify`,
    /// `acquireWrite`): the mere presence of either property makes bluetoothd use
    /// `AcquireNotify`/`AcquireWrite` instead of `StartNotify`/`WriteValue`.
    static func characteristic(rows: [PropertyRow<ExportedAttribute>], sockets: AcquiredSockets.Kinds) -> DBusInterface {
        var methods = characteristicMethods
        if sockets.contains(.notify) { methods.append(acquireNotify) }
        if sockets.contains(.write) { methods.append(acquireWrite) }
        return DBusInterface(
            name: BlueZNames.gattCharacteristic, methods: methods, properties: rows.map(\.declaration), signals: [])
    }

    static let descriptor = DBusInterface(
        name: BlueZNames.gattDescriptor,
        methods: [readValue, writeValue],
        properties: ExportedAttribute.descriptorProperties.map(\.declaration),
        signals: [])
}
