// SPDX-License-Identifier: MIT

public import BlueZ
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
                "CentralConnected", [deviceArgument(device), .variantDictionary(info(device, address, type, name))])
        case .disconnected(let device, let address, let type, let name):
            emitEvent(
                "CentralDisconnected", [deviceArgument(device), .variantDictionary(info(device, address, type, name))])
        case .addressChanged(let device, let oldAddress, let oldType, let address, let type, let name):
            var entries = info(device, address, type, name)
            entries.append(("OldAddress", .string(oldAddress)))
            if let oldType { entries.append(("OldAddressType", .string(oldType))) }
            emitEvent("CentralAddressChanged", [deviceArgument(device), .variantDictionary(entries)])
        case .powered(let powered):
            adapterEvent(adapter: currentAdapter, state: powered ? "powered" : "unpowered")
        }
    }

    /// `AdapterChanged(s adapter, s state)`: `present`, `gone`, `powered`, `unpowered`.
    public func adapterEvent(adapter: String?, state: String) {
        if state == "present" { currentAdapter = adapter }
        emitEvent("AdapterChanged", [.string(adapter ?? currentAdapter ?? ""), .string(state)])
        if state == "gone" { currentAdapter = nil }
    }

    /// `AdvertisementChanged(s id, s state)`, the state as `GetStatus` words it.
    public func advertisementEvent(id: String, state: Advertiser.State) {
        emitEvent("AdvertisementChanged", [.string(id), .string(Self.describe(state))])
    }

    /// `CentralSubscriptionChanged(s id, o device, b subscribed)`: one central, named by
    /// bluetoothd, subscribed to or left characteristic `id` (the socket path).
    public func centralSubscriptionEvent(_ attribute: Attribute, device: String, subscribed: Bool) {
        guard attribute.isCharacteristic else { return }
        emitEvent("CentralSubscriptionChanged", [.string(attribute.id), deviceArgument(device), .bool(subscribed)])
    }

    func subscriptionEvent(_ attribute: Attribute) {
        guard attribute.isCharacteristic else { return }
        emitEvent("SubscriptionChanged", [.string(attribute.id), .bool(attribute.isNotifying)])
    }

    private func info(_ device: String, _ address: String, _ type: String?, _ name: String?) -> [(String, DBusValue)] {
        var entries: [(String, DBusValue)] = [("Address", .string(address))]
        if let type { entries.append(("AddressType", .string(type))) }
        if let name { entries.append(("Name", .string(name))) }
        if let mtu = service.mtu.mtu(for: device) { entries.append(("MTU", .uint16(UInt16(clamping: mtu)))) }
        return entries
    }

    private func deviceArgument(_ device: String) -> DBusValue {
        .objectPath((try? ObjectPath(device)) ?? BlueZNamesForControl.unknownDevice)
    }

    func emitEvent(_ member: String, _ arguments: [DBusValue]) {
        guard nameState == .owned, !watchers.isEmpty else { return }
        do {
            try connection.emitSignal(
                path: ControlNames.managerPath, interface: ControlNames.managerInterface, member: member,
                arguments: arguments)
        } catch {
            logger.warning("could not emit \(member)", metadata: ["error": "\(error)"])
        }
    }
}

/// A stand-in path for an event whose device path bluetoothd gave in an unusable form.
enum BlueZNamesForControl {
    static let unknownDevice: ObjectPath = "/"
}
