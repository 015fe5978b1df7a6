// SPDX-License-Identifier: MIT

public import DBusKit

/// Why a control call was refused; the one mapping to `org.gattd.Error.*`.
///
/// `gattctl` maps the names back to its exit codes through `Name`, so the two ends share
/// one spelling.
public enum ControlError: Error, Equatable, Sendable {
    /// No characteristic has this id.
    case unknownCharacteristic(String)
    /// The value's length is outside the characteristic's `minLength...maxLength`, the
    /// same rule a central's write meets.
    case invalidValueLength(id: String, length: Int, minimum: Int, maximum: Int)
    /// No advertisement has this id.
    case unknownAdvertisement(String)
    /// The new value or advertising state could not be saved; nothing was changed.
    case notSaved(id: String, reason: String)
    /// `delivery: "all"`: the characteristic's queue of values not yet notified is full;
    /// nothing was changed. `ReadyToUpdate(id)` says when there is room again.
    case queueFull(id: String, capacity: Int)
    /// Advertising data changes that break the definition's rules or the byte budget.
    case invalidAdvertisement(id: String, problems: [String])
    /// Another program's handler already serves this attribute.
    case alreadyClaimed(id: String, by: String)
    /// `UnregisterHandler` for an object the caller never registered.
    case notRegistered(String)
    /// `OpenPairing` while gattd does not pair, or pairs always or never; the reason.
    case pairingUnavailable(String)
    /// `RemoveBond` for an address bluetoothd keeps no bond with.
    case unknownBond(String)
    /// `SetValueWithOptions` with `centrals`: the value cannot reach exactly those
    /// centrals (the reason in words); it was not sent to anyone instead.
    case cannotTarget(String)
    /// No connected central has this address (`DisconnectCentral`).
    case unknownCentral(String)
    /// `ConfirmPairing`/`RejectPairing` with no confirmation pending for the address (or
    /// at all); the reason.
    case noPendingConfirmation(String)
    /// gattd could not do it for another reason, in plain words.
    case failed(String)

    /// The D-Bus error names, `org.gattd.Error.<Name>`.
    public enum Name {
        public static let unknownCharacteristic = ControlNames.errorPrefix + "UnknownCharacteristic"
        public static let invalidValueLength = ControlNames.errorPrefix + "InvalidValueLength"
        public static let unknownAdvertisement = ControlNames.errorPrefix + "UnknownAdvertisement"
        public static let notSaved = ControlNames.errorPrefix + "NotSaved"
        public static let queueFull = ControlNames.errorPrefix + "QueueFull"
        public static let invalidAdvertisement = ControlNames.errorPrefix + "InvalidAdvertisement"
        public static let alreadyClaimed = ControlNames.errorPrefix + "AlreadyClaimed"
        public static let notRegistered = ControlNames.errorPrefix + "NotRegistered"
        public static let pairingUnavailable = ControlNames.errorPrefix + "PairingUnavailable"
        public static let unknownBond = ControlNames.errorPrefix + "UnknownBond"
        public static let cannotTarget = ControlNames.errorPrefix + "CannotTarget"
        public static let unknownCentral = ControlNames.errorPrefix + "UnknownCentral"
        public static let noPendingConfirmation = ControlNames.errorPrefix + "NoPendingConfirmation"
        public static let failed = ControlNames.errorPrefix + "Failed"
    }

    public var name: String {
        switch self {
        case .unknownCharacteristic: Name.unknownCharacteristic
        case .invalidValueLength: Name.invalidValueLength
        case .unknownAdvertisement: Name.unknownAdvertisement
        case .notSaved: Name.notSaved
        case .queueFull: Name.queueFull
        case .invalidAdvertisement: Name.invalidAdvertisement
        case .alreadyClaimed: Name.alreadyClaimed
        case .notRegistered: Name.notRegistered
        case .pairingUnavailable: Name.pairingUnavailable
        case .unknownBond: Name.unknownBond
        case .cannotTarget: Name.cannotTarget
        case .unknownCentral: Name.unknownCentral
        case .noPendingConfirmation: Name.noPendingConfirmation
        case .failed: Name.failed
        }
    }

    /// The human-readable message carried with the error.
    public var message: String {
        switch self {
        case .unknownCharacteristic(let id):
            "no characteristic has id \"\(id)\""
        case .invalidValueLength(let id, let length, let minimum, let maximum):
            "\(id) takes \(minimum)...\(maximum) bytes, got \(length)"
        case .unknownAdvertisement(let id):
            "no advertisement has id \"\(id)\""
        case .notSaved(let id, let reason):
            "\(id) was not changed: the state could not be saved (\(reason))"
        case .queueFull(let id, let capacity):
            "\(id) was not changed: its \(capacity) values not yet notified fill its queue; wait for ReadyToUpdate"
        case .invalidAdvertisement(let id, let problems):
            "advertisement \(id) was not changed: " + problems.joined(separator: "; ")
        case .alreadyClaimed(let id, let holder):
            "\(id) is already served by the handler \(holder)"
        case .notRegistered(let name):
            "no handler \(name) is registered by this caller"
        case .pairingUnavailable(let reason):
            reason
        case .unknownBond(let address):
            "no bond with \(address)"
        case .cannotTarget(let reason):
            reason
        case .unknownCentral(let address):
            "no central with address \(address) is connected"
        case .noPendingConfirmation(let reason):
            reason
        case .failed(let text):
            text
        }
    }

    public var dbusError: DBusError { DBusError(name: name, message: message) }
}
