// SPDX-License-Identifier: MIT

internal import DBusKit

/// Descriptions of the BlueZ server-side interfaces gattd implements
/// (bluez-contract.md 1.2), shared by every exported object of a kind.
enum GattInterfaces {
    static let service = DBusInterface(
        name: BlueZNames.gattService,
        methods: [],
        properties: [
            DBusProperty(name: "UUID", signature: "s", access: .read),
            DBusProperty(name: "Primary", signature: "b", access: .read),
            DBusProperty(name: "Includes", signature: "ao", access: .read),
        ],
        signals: [])

    /// No `WriteAcquired`/`NotifyAcquired`: their mere presence makes bluetoothd use
    /// AcquireWrite/AcquireNotify instead of WriteValue/StartNotify.
    static let characteristic = DBusInterface(
        name: BlueZNames.gattCharacteristic,
        methods: [
            DBusMethod(name: "ReadValue", inSignature: "a{sv}", outSignature: "ay"),
            DBusMethod(name: "WriteValue", inSignature: "aya{sv}", outSignature: ""),
            DBusMethod(name: "StartNotify", inSignature: "", outSignature: ""),
            DBusMethod(name: "StopNotify", inSignature: "", outSignature: ""),
            DBusMethod(name: "Confirm", inSignature: "", outSignature: ""),
        ],
        properties: [
            DBusProperty(name: "UUID", signature: "s", access: .read),
            DBusProperty(name: "Service", signature: "o", access: .read),
            DBusProperty(name: "Flags", signature: "as", access: .read),
            DBusProperty(name: "Value", signature: "ay", access: .read),
            DBusProperty(name: "Notifying", signature: "b", access: .read),
        ],
        signals: [])

    static let descriptor = DBusInterface(
        name: BlueZNames.gattDescriptor,
        methods: [
            DBusMethod(name: "ReadValue", inSignature: "a{sv}", outSignature: "ay"),
            DBusMethod(name: "WriteValue", inSignature: "aya{sv}", outSignature: ""),
        ],
        properties: [
            DBusProperty(name: "UUID", signature: "s", access: .read),
            DBusProperty(name: "Characteristic", signature: "o", access: .read),
            DBusProperty(name: "Flags", signature: "as", access: .read),
            DBusProperty(name: "Value", signature: "ay", access: .read),
        ],
        signals: [])
}
