// SPDX-License-Identifier: MIT

public import DBusKit

/// The signals of `org.gattd.Manager1`, each with its signature (docs/control-api.md): the
/// daemon declares and emits them through this type, gattctl's `watch` reads them by it.
public enum ControlSignal: String, CaseIterable, Sendable {
    case valueWritten = "ValueWritten"
    case valueChanged = "ValueChanged"
    case readyToUpdate = "ReadyToUpdate"
    case subscriptionChanged = "SubscriptionChanged"
    case centralSubscriptionChanged = "CentralSubscriptionChanged"
    case centralConnected = "CentralConnected"
    case centralDisconnected = "CentralDisconnected"
    case centralAddressChanged = "CentralAddressChanged"
    case adapterChanged = "AdapterChanged"
    case advertisementChanged = "AdvertisementChanged"
    case passkeyDisplayed = "PasskeyDisplayed"
    case pairingChanged = "PairingChanged"
    case pairingConfirmation = "PairingConfirmation"
    case channelOpened = "ChannelOpened"
    case channelClosed = "ChannelClosed"

    /// The signal's argument signature.
    public var signature: String {
        switch self {
        case .valueWritten: "sayss"
        case .valueChanged: "says"
        case .readyToUpdate: "s"
        case .subscriptionChanged: "sb"
        case .centralSubscriptionChanged: "sob"
        case .centralConnected, .centralDisconnected, .centralAddressChanged: "oa{sv}"
        case .adapterChanged, .advertisementChanged: "ss"
        case .passkeyDisplayed, .pairingConfirmation: "oss"
        case .pairingChanged: "bu"
        case .channelOpened, .channelClosed: "sa{sv}"
        }
    }

    /// The manager interface's signals, in the order introspection lists them.
    public static var descriptions: [DBusSignalDescription] {
        allCases.map { DBusSignalDescription($0.rawValue, signature: $0.signature) }
    }
}
