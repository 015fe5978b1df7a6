// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import ControlAPI
import DBusKit
import DaemonCore

extension ControlManager {
    /// Tells the manager where registration stands (the daemon forwards every change).
    /// A refusal by bluetoothd becomes the `LastError` of `GetStatus`.
    public func registrationChanged(_ state: BlueZRegistrar.State) {
        registration = state
        if case .failed = state { lastError = state.summary }
    }

    /// `GetStatus`: `Version` s, `Adapter` s ("" while none), `Registered` b,
    /// `Registration` s (in words), `Advertisements` a{ss} (id -> state), `Advertising` as
    /// (ids on air), `Subscriptions` u (characteristics with a subscriber), `LastError` s
    /// ("" when none), `Refusals` aa{sv} (bluetoothd's refusals as data: `describe(_:)`),
    /// then `Pairing` s (mode), `Pairable` s, `PairingOpen` b,
    /// `PairingSecondsLeft` u (the last three only when gattd pairs) and `BondedOnly` b.
    func status() -> DBusValue {
        var adapter = ""
        var registered = false
        switch registration {
        case .registered(let name):
            adapter = name
            registered = true
        case .registering(let name), .failed(let name, _, _):
            adapter = name
        case .waitingForAdapter, .starting, .waitingForBlueZ, .discovering:
            break
        }
        let states = port.advertising?.states() ?? []
        let advertisementStates = states.map { entry in
            DBusDictionaryEntry(key: .string(entry.id), value: .string(Self.describe(entry.state)))
        }
        var lastError = self.lastError ?? ""
        var refusals: [Refusal] = states.compactMap { if case .refused(_, let refusal) = $0.state { refusal } else { nil } }
        if case .failed(_, _, let refusal) = registration {
            lastError = registration.summary
            refusals.insert(refusal, at: 0)
        }
        return ControlKey.dictionary([
            (.version, .string(version)),
            (.adapter, .string(adapter)),
            (.registered, .bool(registered)),
            (.registration, .string(registration.summary)),
            (.advertisements, .dictionary(keySignature: "s", valueSignature: "s", advertisementStates)),
            (.advertising, .stringArray(states.filter { $0.state == .advertising }.map(\.id))),
            (.subscriptions, .uint32(UInt32(clamping: database.subscribedCount))),
            (.lastError, .string(lastError)),
            (.refusals, .array(elementSignature: "a{sv}", refusals.map(Self.describe))),
        ] + pairingStatus())
    }

    /// One of `Refusals`: `Subject` s (`application`, `advertisement`), `ErrorName` s and
    /// `Message` s, bluetoothd's answer as it came.
    static func describe(_ refusal: Refusal) -> DBusValue {
        ControlKey.dictionary([
            (.subject, .string(refusal.subject.rawValue)), (.errorName, .string(refusal.errorName)),
            (.message, .string(refusal.message)),
        ])
    }

    /// `advertising`, `disabled`, `waiting-for-adapter`, `registering`, `expired`, or
    /// `refused: <reason>`.
    static func describe(_ state: Advertiser.State) -> String {
        switch state {
        case .disabled: "disabled"
        case .waitingForAdapter: "waiting-for-adapter"
        case .registering: "registering"
        case .advertising: "advertising"
        case .refused(let reason, _): "refused: \(reason)"
        case .expired: "expired"
        }
    }
}
