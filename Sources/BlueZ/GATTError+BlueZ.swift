// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit

/// The one place that turns ATT semantics into `org.bluez.Error.*` names.
///
/// bluetoothd maps the error of a `ReadValue`/`WriteValue` reply back to an ATT code in
/// `dbus_error_to_att_ecode` (docs/bluez-contract.md §4). Application codes 0x80-0x9F travel
/// as `org.bluez.Error.Failed` whose message is the number (BlueZ 5.66 and later parse it
/// with `strtol`); anything bluetoothd does not recognise becomes 0x0E Unlikely Error.
extension GATTError {
    var bluezError: DBusError {
        switch self {
        case .readNotPermitted:
            return DBusError(name: BlueZError.notPermitted, message: "Read not permitted")
        case .writeNotPermitted:
            return DBusError(name: BlueZError.notPermitted, message: "Write not permitted")
        case .invalidOffset:
            return DBusError(name: BlueZError.invalidOffset, message: "Invalid offset")
        case .invalidAttributeValueLength:
            return DBusError(name: BlueZError.invalidValueLength, message: "Invalid value length")
        case .insufficientAuthorization:
            return DBusError(name: BlueZError.notAuthorized, message: "Not authorized")
        case .requestNotSupported:
            return DBusError(name: BlueZError.notSupported, message: "Not supported")
        case .procedureAlreadyInProgress:
            return DBusError(name: BlueZError.inProgress, message: "In progress")
        case .cccImproperlyConfigured:
            // 0xFD since BlueZ 5.76; 5.66 maps this name to 0x0E.
            return DBusError(name: BlueZError.improperlyConfigured, message: "CCC improperly configured")
        case .unlikely:
            // A name outside bluetoothd's table: 0x0E on every version (Failed would be
            // 0x80 before 5.66).
            return DBusError(name: DBusError.Name.failed, message: "Unlikely error")
        case .application(let code):
            return DBusError(name: BlueZError.failed, message: "0x" + lowercaseHex([code]))
        }
    }
}

/// Errors for bluetoothd's calls; the `org.bluez.Error.*` names are in BlueZNames.swift.
enum BlueZError {
    /// A malformed call from bluetoothd's side (bad option types, unknown options).
    static func invalidArguments(_ message: String) -> DBusError {
        DBusError(name: invalidArguments, message: message)
    }

    /// A call gattd cannot serve for a reason of its own (e.g. no socket could be made).
    /// For `AcquireNotify`, bluetoothd takes `Failed` as "give up" rather than falling back.
    static func failure(_ message: String) -> DBusError {
        DBusError(name: failed, message: message)
    }
}
