// SPDX-License-Identifier: MIT

public import BlueZ
import ControlAPI
import DBusKit
import DaemonCore
import Logging

/// Events for programs (docs/control-api.md, "Signals"), sent only to clients that
/// called `Subscribe()`, like `ValueWritten` and `ValueChanged`.
extension ControlManager {
    /// A central connected or disconnected, a connected central's address changed
    /// (`CentralAddressChanged`), or the adapter's `Powered` changed.
    public func centralEvent(_ event: CentralWatch.Event) {
        switch event {
        case .connected(let device, let address, let type, let name):
            emitEvent(
                .centralConnected, [deviceArgument(device), ControlKey.dictionary(info(device, address, type, name))])
        case .disconnected(let device, let address, let type, let name):
            emitEvent(
                .centralDisconnected, [deviceArgument(device), ControlKey.dictionary(info(device, address, type, name))])
        case .addressChanged(let device, let oldAddress, let oldType, let address, let type, let name):
            var entries = info(device, address, type, name)
            entries.append((.oldAddress, .string(oldAddress)))
            if let oldType { entries.append((.oldAddressType, .string(oldType))) }
            emitEvent(.centralAddressChanged, [deviceArgument(device), ControlKey.dictionary(entries)])
        case .powered(let powered):
            adapterEvent(adapter: currentAdapter, state: powered ? "powered" : "unpowered")
        }
    }

    /// What the pairing reports: `PasskeyDisplayed`, `PairingConfirmation`, `PairingChanged`.
    public func pairingEvent(_ event: Pairing.Event) {
        switch event {
        case .passkey(let device, let address, let passkey):
            passkeyEvent(device: device, address: address, passkey: passkey)
        case .confirmation(let device, let address, let passkey):
            confirmationEvent(device: device, address: address, passkey: passkey)
        case .window(let open, let secondsLeft):
            pairingEvent(open: open, secondsLeft: secondsLeft)
        }
    }

    /// `AdapterChanged(s adapter, s state)`: `present`, `gone`, `powered`, `unpowered`.
    public func adapterEvent(adapter: String?, state: String) {
        if state == "present" { currentAdapter = adapter }
        emitEvent(.adapterChanged, [.string(adapter ?? currentAdapter ?? ""), .string(state)])
        if state == "gone" { currentAdapter = nil }
    }

    /// `AdvertisementChanged(s id, s state)`, the state as `GetStatus` words it.
    public func advertisementEvent(id: String, state: Advertiser.State) {
        emitEvent(.advertisementChanged, [.string(id), .string(Self.describe(state))])
    }

    /// `CentralSubscriptionChanged(s id, o device, b subscribed)`: one central, named by
    /// bluetoothd, subscribed to or left characteristic `id` (the socket path).
    public func centralSubscriptionEvent(_ attribute: Attribute, device: String, subscribed: Bool) {
        guard attribute.isCharacteristic else { return }
        emitEvent(.centralSubscriptionChanged, [.string(attribute.id), deviceArgument(device), .bool(subscribed)])
    }

    func subscriptionEvent(_ attribute: Attribute) {
        guard attribute.isCharacteristic else { return }
        emitEvent(.subscriptionChanged, [.string(attribute.id), .bool(attribute.isNotifying)])
    }

    private func info(_ device: String, _ address: String, _ type: String?, _ name: String?) -> [(ControlKey, DBusValue)] {
        var entries: [(ControlKey, DBusValue)] = [(.address, .string(address))]
        if let type { entries.append((.addressType, .string(type))) }
        if let name { entries.append((.name, .string(name))) }
        if let mtu = service.mtu.mtu(for: device) { entries.append((.mtu, .uint16(UInt16(clamping: mtu)))) }
        return entries
    }

    private func deviceArgument(_ device: String) -> DBusValue {
        .objectPath((try? ObjectPath(device)) ?? BlueZNamesForControl.unknownDevice)
    }

    func emitEvent(_ signal: ControlSignal, _ arguments: [DBusValue]) {
        guard nameState == .owned, !watchers.isEmpty else { return }
        do {
            try connection.emitSignal(
                path: ControlNames.managerPath, interface: ControlNames.managerInterface, member: signal.rawValue,
                arguments: arguments)
        } catch {
            logger.warning("could not emit \(signal.rawValue)", metadata: ["error": "\(error)"])
        }
    }
}

/// A stand-in path for an event whose device path bluetoothd gave in an unusable form.
enum BlueZNamesForControl {
    static let unknownDevice: ObjectPath = "/"
}
