// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import ControlAPI
import DBusKit
import DaemonCore
import Logging

/// Pairing and bonds over the control API (docs/control-api.md, "Pairing and bonds").
extension ControlManager {
    /// `OpenPairing(u seconds)`: opens the pairing window (0: the configured length).
    func openPairing(seconds: Int, call: MethodCall) {
        guard security.pairs, let pairingWindow = port.pairingWindow else {
            return refuse(call, .pairingUnavailable("gattd does not pair (security.pairing is \"none\")"))
        }
        let length: Int
        if seconds > 0 {
            length = seconds
        } else if case .window(let configured) = security.pairable {
            length = configured
        } else {
            length = SecurityDefinition.defaultWindowSeconds
        }
        if let reason = pairingWindow.open(length) { return refuse(call, .pairingUnavailable(reason)) }
        logger.info("pairing opened over the control API", metadata: ["sender": "\(call.sender ?? "?")", "seconds": "\(length)"])
        call.reply([.uint32(UInt32(length))])
    }

    /// `ConfirmPairing(s address)` / `RejectPairing(s address)`: decides the numeric
    /// comparison pending for the central (nil: the only one pending).
    func decidePairing(address: String?, accept: Bool, call: MethodCall) {
        guard let confirmations = port.confirmations else {
            return refuse(
                call,
                .pairingUnavailable(
                    "gattd does not confirm pairings (security.pairing is \"\(security.pairing.rawValue)\", "
                        + "not \"numeric-comparison\")"))
        }
        let caller = "gattctl or a control client (\(call.sender ?? "?"))"
        let decision: PendingConfirmations.Decision =
            accept ? .accept(by: caller) : .reject(because: "rejected by \(caller)")
        switch confirmations.decide(address, decision) {
        case .success(let pending):
            logger.notice(
                accept ? "pairing confirmed over the control API" : "pairing rejected over the control API",
                metadata: ["device": "\(pending.address)", "sender": "\(call.sender ?? "?")"])
            call.reply()
        case .failure(let refusal):
            if case .ambiguous = refusal { return refuse(call, .pairingUnavailable(refusal.message)) }
            refuse(call, .noPendingConfirmation(refusal.message))
        }
    }

    /// `PairingConfirmation(o device, s address, s passkey)`: numeric comparison; the six
    /// digits both sides show, to confirm or reject. Only subscribers in the bus policy's
    /// circle (root, group gattd) receive it.
    public func confirmationEvent(device: String, address: String, passkey: String) {
        emitEvent(
            .pairingConfirmation,
            [.objectPath((try? ObjectPath(device)) ?? BlueZNamesForControl.unknownDevice), .string(address), .string(passkey)])
    }

    /// `ListBonds() -> aa{sv}`, one entry per address: `Device` o, `Address` s,
    /// `AddressType` s and `Name` s (when known), `Paired` b, `Bonded` b, `Trusted` b,
    /// `Connected` b.
    func listBonds() -> DBusValue {
        let bonds = port.centrals?.bonds() ?? []
        return .array(
            elementSignature: "a{sv}",
            bonds.map { bond in
                var entries: [(ControlKey, DBusValue)] = [
                    (.device, .objectPath((try? ObjectPath(bond.device)) ?? BlueZNamesForControl.unknownDevice)),
                    (.address, .string(bond.address)),
                ]
                if let type = bond.addressType { entries.append((.addressType, .string(type))) }
                if let name = bond.name { entries.append((.name, .string(name))) }
                entries += [
                    (.paired, .bool(bond.paired)), (.bonded, .bool(bond.bonded)), (.trusted, .bool(bond.trusted)),
                    (.connected, .bool(bond.connected)),
                ]
                return ControlKey.dictionary(entries)
            })
    }

    /// `RemoveBond(s address)`: bluetoothd forgets the central and its keys; it must pair
    /// again. Every object bluetoothd keeps with that address goes (two after a phone paired
    /// again with a new IRK), the one standing for it last; only those known when the call
    /// came. bluetoothd removes keys by address, so once an object the call did not know
    /// comes with that address (the phone paired again meanwhile), gattd removes no more:
    /// the next removal would take that newer bond too.
    func removeBond(address: String, call: MethodCall) {
        guard let centrals = port.centrals, centrals.bonds().contains(where: { $0.address.uppercased() == address.uppercased() })
        else {
            return refuse(call, .unknownBond(address))
        }
        let devices = centrals.devices(address)
        removeDevices(devices, known: Set(devices), address: address, centrals: centrals, call: call)
    }

    private func removeDevices(
        _ devices: [String], known: Set<String>, address: String, centrals: ControlPort.Centrals, call: MethodCall
    ) {
        guard let device = devices.first else {
            logger.notice("bond removed", metadata: ["device": "\(address)", "sender": "\(call.sender ?? "?")"])
            return call.reply()
        }
        let newer = centrals.devices(address).filter { !known.contains($0) }
        if !newer.isEmpty {
            logger.notice(
                "bond removed; a newer object with its address came meanwhile and is left with the rest",
                metadata: [
                    "device": "\(address)", "newer": "\(newer)", "left": "\(devices)", "sender": "\(call.sender ?? "?")",
                ])
            return call.reply()
        }
        centrals.remove(device) { [self] error in
            if let error {
                logger.warning(
                    "could not remove a bond",
                    metadata: ["device": "\(address)", "device.path": "\(device)", "error": "\(error.name): \(error.message)"])
                call.fail(ControlError.failed("bluetoothd did not remove \(address): \(error.message)").dbusError)
                return
            }
            removeDevices(Array(devices.dropFirst()), known: known, address: address, centrals: centrals, call: call)
        }
    }

    /// `PasskeyDisplayed(o device, s address, s passkey)`: the six digits the person at the
    /// central must type in. Only subscribers in the bus policy's circle (root, group
    /// gattd) receive it.
    public func passkeyEvent(device: String, address: String, passkey: String) {
        emitEvent(
            .passkeyDisplayed,
            [.objectPath((try? ObjectPath(device)) ?? BlueZNamesForControl.unknownDevice), .string(address), .string(passkey)])
    }

    /// `PairingChanged(b open, u secondsLeft)` (0 seconds: no limit, or closed).
    public func pairingEvent(open: Bool, secondsLeft: Int?) {
        emitEvent(.pairingChanged, [.bool(open), .uint32(UInt32(clamping: secondsLeft ?? 0))])
    }

    /// The pairing entries of `GetStatus`.
    func pairingStatus() -> [(ControlKey, DBusValue)] {
        var entries: [(ControlKey, DBusValue)] = [(.pairing, .string(security.pairing.rawValue))]
        if security.pairs {
            entries.append((.pairable, .string(security.pairable.word)))
            entries.append((.pairingOpen, .bool(port.pairingWindow?.isOpen() ?? false)))
            entries.append((.pairingSecondsLeft, .uint32(UInt32(clamping: port.pairingWindow?.secondsLeft() ?? 0))))
        }
        entries.append((.bondedOnly, .bool(security.bondedOnly)))
        return entries
    }
}
