// SPDX-License-Identifier: MIT

/// The methods of `org.gattd.Manager1` by name (docs/control-api.md). The daemon's rows
/// (`ControlRequest.methods`, one per case) and gattctl's calls both spell a method through
/// this type, so a name is written once.
public enum ControlMethod: String, CaseIterable, Sendable {
    case listCharacteristics = "ListCharacteristics"
    case getValue = "GetValue"
    case setValue = "SetValue"
    case setValueWithOptions = "SetValueWithOptions"
    case startAdvertising = "StartAdvertising"
    case stopAdvertising = "StopAdvertising"
    case setAdvertisementData = "SetAdvertisementData"
    case getStatus = "GetStatus"
    case subscribe = "Subscribe"
    case unsubscribe = "Unsubscribe"
    case registerHandler = "RegisterHandler"
    case unregisterHandler = "UnregisterHandler"
    case openPairing = "OpenPairing"
    case confirmPairing = "ConfirmPairing"
    case rejectPairing = "RejectPairing"
    case listBonds = "ListBonds"
    case listCentrals = "ListCentrals"
    case disconnectCentral = "DisconnectCentral"
    case registerChannel = "RegisterChannel"
    case unregisterChannel = "UnregisterChannel"
    case listChannels = "ListChannels"
    case removeBond = "RemoveBond"
}
