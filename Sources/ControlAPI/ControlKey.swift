// SPDX-License-Identifier: MIT

public import DBusKit

/// The keys of the dictionaries the control API returns (docs/control-api.md): `GetStatus`,
/// `ListCharacteristics`, `ListCentrals`, `ListBonds` and the central events' `a{sv}`, and the
/// options `SetValueWithOptions` and `RegisterHandler` take. The daemon builds them and
/// gattctl reads them through this type, so each key is spelt once.
public enum ControlKey: String, CaseIterable, Sendable {
    // GetStatus
    case version = "Version"
    case adapter = "Adapter"
    case registered = "Registered"
    case registration = "Registration"
    case advertisements = "Advertisements"
    case advertising = "Advertising"
    case subscriptions = "Subscriptions"
    case lastError = "LastError"
    case pairing = "Pairing"
    case pairable = "Pairable"
    case pairingOpen = "PairingOpen"
    case pairingSecondsLeft = "PairingSecondsLeft"
    case bondedOnly = "BondedOnly"
    /// bluetoothd's refusals of what gattd registered, each an `a{sv}` of `Subject`,
    /// `ErrorName` and `Message`: what `gattd --doctor` reads (data, not the words above).
    case refusals = "Refusals"
    case subject = "Subject"
    case errorName = "ErrorName"
    case message = "Message"
    // ListCharacteristics
    case id = "Id"
    case service = "Service"
    case uuid = "UUID"
    case flags = "Flags"
    case value = "Value"
    case notifying = "Notifying"
    case persistent = "Persistent"
    case minLength = "MinLength"
    case maxLength = "MaxLength"
    case handler = "Handler"
    case type = "Type"
    case notifySockets = "NotifySockets"
    case writeSockets = "WriteSockets"
    case handle = "Handle"
    // ListCentrals, ListBonds and the central events
    case device = "Device"
    case address = "Address"
    case addressType = "AddressType"
    case oldAddress = "OldAddress"
    case oldAddressType = "OldAddressType"
    case name = "Name"
    case paired = "Paired"
    case bonded = "Bonded"
    case trusted = "Trusted"
    case connected = "Connected"
    case connectedSince = "ConnectedSince"
    case mtu = "MTU"
    case maxUpdateLength = "MaxUpdateLength"
    case subscribed = "Subscribed"
    // ListChannels and the channel events (ChannelOpened, ChannelClosed, ChannelTaker1.Open)
    case security = "Security"
    case listening = "Listening"
    case psm = "PSM"
    case error = "Error"
    case program = "Program"
    case taker = "Taker"
    case open = "Open"
    case serial = "Serial"
    case sendMTU = "SendMTU"
    case receiveMTU = "ReceiveMTU"
    case takenBy = "TakenBy"
    case bytesIn = "BytesIn"
    case bytesOut = "BytesOut"
    case reason = "Reason"
    // SetValueWithOptions' options
    case centrals = "centrals"
    // RegisterHandler's options
    case operations = "operations"

    /// An `a{sv}` of these entries, in their order.
    public static func dictionary(_ entries: [(ControlKey, DBusValue)]) -> DBusValue {
        .variantDictionary(entries.map { ($0.0.rawValue, $0.1) })
    }
}
