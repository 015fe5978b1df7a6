// SPDX-License-Identifier: MIT

import BlueZ
import ControlAPI
import DBusKit
import Logging

/// The connected centrals over the control API (docs/control-api.md, `ListCentrals`,
/// `DisconnectCentral`): CoreBluetooth's `CBCentral`s, seen from the board.
extension ControlManager {
    /// `ListCentrals() -> aa{sv}`: `Device` o, `Address` s, `AddressType` s and `Name` s (when known), `Paired` b,
    /// `Bonded` b, `Trusted` b, `ConnectedSince` t, `MTU` q and `MaxUpdateLength` q (when
    /// known), `Subscribed` as (when bluetoothd gives each central its own socket).
    func listCentrals() -> DBusValue {
        let subscriptions = port.centralSubscriptions?() ?? nil
        return .array(
            elementSignature: "a{sv}",
            (port.centrals?.connected() ?? []).map { central in
                var entries: [(ControlKey, DBusValue)] = [
                    (.device, .objectPath((try? ObjectPath(central.device)) ?? BlueZNamesForControl.unknownDevice)),
                    (.address, .string(central.address))
                ]
                if let type = central.addressType { entries.append((.addressType, .string(type))) }
                if let name = central.name { entries.append((.name, .string(name))) }
                entries += [
                    (.paired, .bool(central.paired)), (.bonded, .bool(central.bonded)),
                    (.trusted, .bool(central.trusted)), (.connectedSince, .uint64(UInt64(max(central.since, 0))))
                ]
                if let mtu = service.mtu.mtu(for: central.device) {
                    entries.append((.mtu, .uint16(UInt16(clamping: mtu))))
                    entries.append((.maxUpdateLength, .uint16(UInt16(clamping: max(mtu - 3, 0)))))
                }
                if let subscriptions {
                    entries.append((.subscribed, .stringArray(subscriptions[central.device] ?? [])))
                }
                return ControlKey.dictionary(entries)
            })
    }

    /// `DisconnectCentral(s address)`: `Device1.Disconnect` on the connected central.
    func disconnectCentral(address: String, call: MethodCall) {
        guard let centrals = port.centrals, let device = centrals.connectedDevice(address) else {
            return refuse(call, .unknownCentral(address))
        }
        centrals.disconnect(device) { [logger] error in
            if let error {
                logger.warning(
                    "could not disconnect a central",
                    metadata: ["device": "\(address)", "error": "\(error.name): \(error.message)"])
                call.fail(ControlError.failed("bluetoothd did not disconnect \(address): \(error.message)").dbusError)
                return
            }
            logger.notice(
                "central disconnected on request", metadata: ["device": "\(address)", "sender": "\(call.sender ?? "?")"]
            )
            call.reply()
        }
    }
}
