// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DaemonCore
internal import Logging
internal import Mainloop
internal import SystemCalls

/// Notifications written to the sockets bluetoothd acquired with `AcquireNotify` (one
/// datagram per value, no D-Bus message), and what bluetoothd writes back on them (the
/// confirmation of an indication, 5.80 and later). The hot path of the socket path: `send`
/// runs once per notification.
extension AcquiredSockets {
    /// Writes `value` as one datagram to each notify socket of `attribute`; nil when it has
    /// none (the caller uses the signal path). False when no socket took it.
    func send(_ attribute: Attribute, value: [UInt8]) -> Bool? {
        // The signal path pays one emptiness check, not a lookup, when no socket is open.
        guard !notifySockets.isEmpty, let sockets = notifySockets[attribute.id], !sockets.isEmpty else { return nil }
        // bluetoothd 5.66 has not read the socket it lost yet: the value waits.
        if !switching.isEmpty, let change = switching[attribute.id] { return change.hold(value) }
        var delivered = false
        for socket in sockets {
            let result = value.withUnsafeBytes { SeqPacketSocket.send(socket.fd, $0) }
            switch result {
            case .sent:
                delivered = true
                noteSent(attribute, socket)
                if socket.dropped > 0 {
                    logger.info(
                        "notifications flow again on the socket",
                        metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "dropped": "\(socket.dropped)"])
                    socket.dropped = 0
                }
            case .wouldBlock:
                if socket.dropped == 0 {
                    logger.warning(
                        "notification dropped: bluetoothd is not reading its socket",
                        metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")"])
                }
                socket.dropped += 1
            case .closed:
                closeNotify(attribute, socket, why: "closed by bluetoothd")
            case .failed(let error):
                logger.error(
                    "notification not sent on the socket",
                    metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "error": "\(error)"])
                closeNotify(attribute, socket, why: "\(error)")
            }
        }
        return delivered
    }

    /// Writes `value` as one datagram to the notify sockets of the centrals `targets` only:
    /// a socket is a central's when bluetoothd named that central's object (the `device`
    /// option), whatever address the object has now (docs/bluez-contract.md, "Private
    /// addresses"); `address` names it in refusals. Refused, with nothing sent, unless every
    /// one has its own socket and bluetoothd sends a socket's datagrams to its central alone.
    func send(
        _ attribute: Attribute, value: [UInt8], to targets: [(address: String, device: String)]
    ) -> Result<Void, TargetRefusal> {
        let sockets = notifySockets[attribute.id] ?? []
        guard !sockets.isEmpty else { return .failure(.signalPath) }
        guard model == .targeted, sockets.allSatisfy({ $0.device != nil }) else {
            return .failure(.untargetable(model == .targeted ? .shared : model))
        }
        var chosen: [(String, Socket)] = []
        for target in targets {
            guard let socket = sockets.first(where: { $0.device == target.device }) else {
                return .failure(.noSocket(target.address))
            }
            chosen.append((target.address, socket))
        }
        var missed: [String] = []
        for (address, socket) in chosen {
            let result = value.withUnsafeBytes { SeqPacketSocket.send(socket.fd, $0) }
            switch result {
            case .sent: noteSent(attribute, socket)
            case .wouldBlock: missed.append("\(address) (bluetoothd is not reading its socket)")
            case .closed:
                missed.append("\(address) (its socket closed)")
                closeNotify(attribute, socket, why: "closed by bluetoothd")
            case .failed(let error):
                missed.append("\(address) (\(error))")
                closeNotify(attribute, socket, why: "\(error)")
            }
        }
        return missed.isEmpty ? .success(()) : .failure(.notSent(missed))
    }

    /// bluetoothd closed a notify socket (its central, or for 5.66 the last one,
    /// unsubscribed) or wrote to it: a `0x01` confirms an indication (5.80 and later).
    func notifySocketReady(_ attribute: Attribute, _ socket: Socket, _ events: IOEvents) {
        for _ in 0..<Self.datagramsPerTurn {
            let result = buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(socket.fd, into: $0) }
            switch result {
            case .datagram(let count):
                if count == 1 && buffer[0] == 0x01 {
                    service.confirm(attribute)
                } else {
                    logger.debug(
                        "ignored bytes bluetoothd wrote to a notify socket",
                        metadata: ["gatt.id": "\(attribute.id)", "length": "\(count)"])
                }
            case .wouldBlock:
                return
            case .closed:
                closeNotify(attribute, socket, why: "closed by bluetoothd")
                return
            case .failed(let error):
                closeNotify(attribute, socket, why: "\(error)")
                return
            }
        }
    }
}
