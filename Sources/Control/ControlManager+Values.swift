// SPDX-License-Identifier: MIT

import BLEModel
import ControlAPI
import DBusKit
import DaemonCore
import Logging

extension ControlManager {
    /// One `a{sv}` per characteristic, in configuration order: `Id` s, `Service` s,
    /// `UUID` s (128-bit, lowercase), `Flags` as, `Value` ay, `Notifying` b, `Persistent` b,
    /// `MinLength` u, `MaxLength` u, `Type` s (how the value reads as one typed value,
    /// empty when the definition does not say), `Handler` s (the bus name and object path of the
    /// program serving it, empty when none), `NotifySockets` u and `WriteSockets` u (the
    /// `AcquireNotify`/`AcquireWrite` sockets bluetoothd holds for it now), `Handle` q (the
    /// ATT handle of its value, the declaration's plus one; 0 while not known).
    func listCharacteristics() -> DBusValue {
        let handles = port.characteristicHandles?() ?? [:]
        let entries: [DBusValue] = characteristics.compactMap { service, definition -> DBusValue? in
            guard let attribute = database[definition.id] else { return nil }
            let sockets = port.acquiredSockets?(definition.id) ?? (notify: 0, write: 0)
            return ControlKey.dictionary([
                (.id, .string(definition.id)),
                (.service, .string(service)),
                (.uuid, .string(attribute.uuid.description)),
                (.flags, .stringArray(definition.flags.map(\.rawValue))),
                (.value, .bytes(attribute.value)),
                (.notifying, .bool(attribute.isNotifying)),
                (.persistent, .bool(persistence?.persists(attribute) ?? false)),
                (.minLength, .uint32(UInt32(clamping: attribute.minLength))),
                (.maxLength, .uint32(UInt32(clamping: attribute.maxLength))),
                (.handler, .string(attribute.handler?.name ?? "")),
                (.type, .string(definition.valueType ?? "")),
                (.notifySockets, .uint32(UInt32(clamping: sockets.notify))),
                (.writeSockets, .uint32(UInt32(clamping: sockets.write))),
                (.handle, .uint16(handles[definition.id] ?? 0)),
            ])
        }
        return .array(elementSignature: "a{sv}", entries)
    }

    func characteristic(id: String) -> Result<Attribute, ControlError> {
        guard characteristicIndex[id] != nil, let attribute = database[id], attribute.isCharacteristic else {
            return .failure(.unknownCharacteristic(id))
        }
        return .success(attribute)
    }

    func getValue(id: String) -> Result<[UInt8], ControlError> {
        characteristic(id: id).map(\.value)
    }

    /// Sets the value as a program on the board through DaemonCore's write pipeline;
    /// replies once the value is durable when the characteristic persists (on a failed
    /// save the value is back as it was).
    func setValue(id: String, to bytes: [UInt8], call: MethodCall) {
        let attribute: Attribute
        switch characteristic(id: id) {
        case .success(let found): attribute = found
        case .failure(let error):
            refuse(call, error)
            return
        }
        service.set(attribute, to: bytes) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .success:
                logger.debug(
                    "value set", metadata: ["gatt.id": "\(id)", "length": "\(bytes.count)", "sender": "\(call.sender ?? "?")"])
                call.reply()
            case .failure(.notSaved(let reason)):
                let refusal = ControlError.notSaved(id: id, reason: reason)
                lastError = refusal.message
                refuse(call, refusal)
            case .failure(.queueFull(let capacity)):
                refuse(call, .queueFull(id: id, capacity: capacity))
            case .failure(.refused):
                refuse(
                    call,
                    .invalidValueLength(
                        id: id, length: bytes.count, minimum: attribute.minLength, maximum: attribute.maxLength))
            }
        }
    }

    /// `SetValueWithOptions` with `centrals`: `bytes` as a notification or indication to
    /// those centrals only, through their own sockets; the stored value does not change
    /// (nothing is saved, no `ValueChanged`). Refused, naming why, where they cannot be
    /// reached that way: never sent to every subscriber instead.
    func setValue(id: String, to bytes: [UInt8], centrals addresses: [String], call: MethodCall) {
        let attribute: Attribute
        switch characteristic(id: id) {
        case .success(let found): attribute = found
        case .failure(let error): return refuse(call, error)
        }
        guard (attribute.minLength...attribute.maxLength).contains(bytes.count) else {
            let error = ControlError.invalidValueLength(
                id: id, length: bytes.count, minimum: attribute.minLength, maximum: attribute.maxLength)
            return refuse(call, error)
        }
        // Each address names the connected central bluetoothd gives it (`Address`: the
        // identity once bonded); its sockets are found by that central's object.
        var targets: [(address: String, device: String)] = []
        for address in addresses {
            guard let device = port.centrals?.connectedDevice(address) else {
                return refuse(call, .cannotTarget("\(address) is not connected"))
            }
            targets.append((address, device))
        }
        guard let sendToCentrals = port.sendToCentrals else {
            return refuse(call, .cannotTarget("\(id) cannot reach chosen centrals here"))
        }
        switch sendToCentrals(attribute, bytes, targets) {
        case .success:
            logger.debug(
                "value sent to chosen centrals",
                metadata: ["gatt.id": "\(id)", "centrals": "\(addresses)", "sender": "\(call.sender ?? "?")"])
            call.reply()
        case .failure(let refusal):
            if case .notSent = refusal {
                refuse(call, .failed(refusal.message(id: id)))
            } else {
                refuse(call, .cannotTarget(refusal.message(id: id)))
            }
        }
    }
}
