// SPDX-License-Identifier: MIT

internal import DBusKit

/// Descriptions of the BlueZ server-side interfaces gattd implements
/// (docs/bluez-contract.md §2), shared by every exported object of a kind.
enum GattInterfaces {
    static let service = DBusInterface(
        name: BlueZNames.gattService,
        methods: [],
        properties: [
            DBusProperty("UUID", signature: "s", access: .read),
            DBusProperty("Primary", signature: "b", access: .read),
            DBusProperty("Includes", signature: "ao", access: .read),
        ],
        signals: [])

    /// No `WriteAcquired`/`NotifyAcquired`: their mere presence makes bluetoothd use
    /// AcquireWrite/AcquireNotify instead of WriteValue/StartNotify.
    static let characteristic = DBusInterface(
        name: BlueZNames.gattCharacteristic,
        methods: [
            DBusMethod("ReadValue", inSignature: "a{sv}", outSignature: "ay"),
            DBusMethod("WriteValue", inSignature: "aya{sv}", outSignature: ""),
            DBusMethod("StartNotify", inSignature: "", outSignature: ""),
            DBusMethod("StopNotify", inSignature: "", outSignature: ""),
            DBusMethod("Confirm", inSignature: "", outSignature: ""),
        ],
        properties: [
            DBusProperty("UUID", signature: "s", access: .read),
            DBusProperty("Service", signature: "o", access: .read),
            DBusProperty("Flags", signature: "as", access: .read),
            DBusProperty("Value", signature: "ay", access: .read),
            DBusProperty("Notifying", signature: "b", access: .read),
        ],
        signals: [])

    static let descriptor = DBusInterface(
        name: BlueZNames.gattDescriptor,
        methods: [
            DBusMethod("ReadValue", inSignature: "a{sv}", outSignature: "ay"),
            DBusMethod("WriteValue", inSignature: "aya{sv}", outSignature: ""),
        ],
        properties: [
            DBusProperty("UUID", signature: "s", access: .read),
            DBusProperty("Characteristic", signature: "o", access: .read),
            DBusProperty("Flags", signature: "as", access: .read),
            DBusProperty("Value", signature: "ay", access: .read),
        ],
        signals: [])
}
