// SPDX-License-Identifier: MIT

internal import DBusKit

/// Every BlueZ D-Bus spelling gattd uses, in one place (cf. iwd's dbus.h); the
/// `org.freedesktop.DBus` ones are DBusKit's `Freedesktop`.
enum BlueZNames {
    static let service = "org.bluez"
    static let root: ObjectPath = "/"

    static let adapter = "org.bluez.Adapter1"
    static let gattManager = "org.bluez.GattManager1"
    static let advertisingManager = "org.bluez.LEAdvertisingManager1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    static let gattDescriptor = "org.bluez.GattDescriptor1"
    static let advertisement = "org.bluez.LEAdvertisement1"
    static let device = "org.bluez.Device1"
    static let agentManager = "org.bluez.AgentManager1"
    static let agent = "org.bluez.Agent1"
    /// Where bluetoothd serves `AgentManager1`.
    static let bluezRoot: ObjectPath = "/org/bluez"

    /// Where gattd's GATT application lives (the ObjectManager root bluetoothd walks).
    static let applicationRoot: ObjectPath = "/org/gattd/app"
    /// Where gattd's advertisements live.
    static let advertisementRoot: ObjectPath = "/org/gattd/adv"
    /// gattd's pairing agent (`org.bluez.Agent1`).
    static let agentPath: ObjectPath = "/org/gattd/agent"
}

/// The `org.bluez.Error.*` names gattd returns to bluetoothd or gets from it.
extension BlueZError {
    static let failed = "org.bluez.Error.Failed"
    static let notPermitted = "org.bluez.Error.NotPermitted"
    static let notAuthorized = "org.bluez.Error.NotAuthorized"
    static let notSupported = "org.bluez.Error.NotSupported"
    static let invalidOffset = "org.bluez.Error.InvalidOffset"
    static let invalidValueLength = "org.bluez.Error.InvalidValueLength"
    static let inProgress = "org.bluez.Error.InProgress"
    static let improperlyConfigured = "org.bluez.Error.ImproperlyConfigured"
    static let invalidArguments = "org.bluez.Error.InvalidArguments"
    static let alreadyExists = "org.bluez.Error.AlreadyExists"
    static let doesNotExist = "org.bluez.Error.DoesNotExist"
    /// What an agent answers to refuse a request (bluetoothd fails the pairing).
    static let rejected = "org.bluez.Error.Rejected"
    static let canceled = "org.bluez.Error.Canceled"
}

extension Result where Success == Message, Failure == DBusError {
    /// The outcome of a registration with bluetoothd (`RegisterApplication`,
    /// `RegisterAdvertisement`, `RegisterAgent`), where `AlreadyExists` means bluetoothd
    /// already holds what was registered: success, as a plain reply is.
    var registered: Result<Void, DBusError> {
        switch self {
        case .success: .success(())
        case .failure(let error) where error.name == BlueZError.alreadyExists: .success(())
        case .failure(let error): .failure(error)
        }
    }
}
