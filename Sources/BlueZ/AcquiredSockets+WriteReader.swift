// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DaemonCore
internal import Logging
internal import Mainloop
internal import SystemCalls

/// The values centrals write, read from the sockets bluetoothd acquired with `AcquireWrite`:
/// each datagram goes through the write pipeline as a central's write that expects no
/// reply, and a refusal is logged (bluetoothd acknowledged the write already).
extension AcquiredSockets {
    func writeSocketReady(_ attribute: Attribute, _ socket: Socket, _ events: IOEvents) {
        for _ in 0..<Self.datagramsPerTurn {
            let result = buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(socket.fd, into: $0) }
            switch result {
            case .datagram(let count):
                guard count < buffer.count else {
                    logger.warning(
                        "write from the socket dropped: longer than any attribute value",
                        metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "length": "\(count)"])
                    continue
                }
                write(attribute, Array(buffer[..<count]), from: socket)
            case .wouldBlock:
                return
            case .closed, .failed:
                closeWrite(attribute, socket, why: result == .closed ? "closed by bluetoothd" : "\(result)")
                return
            }
        }
    }

    /// A written value from the socket, through the write pipeline; a refusal cannot reach
    /// the central (bluetoothd acknowledged the write already), so it is logged.
    private func write(_ attribute: Attribute, _ bytes: [UInt8], from socket: Socket) {
        let request = AttributeRequest(
            caller: .central, device: socket.device, offset: 0, mtu: socket.mtu, expectsReply: false)
        service.write(attribute, bytes: bytes, request) { [logger] outcome in
            guard case .failure(let failure) = outcome else { return }
            logger.warning(
                "write from the socket dropped",
                metadata: [
                    "gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "length": "\(bytes.count)",
                    "att.error": "0x\(String(failure.gattError.attCode, radix: 16))", "reason": "\(failure)",
                ])
        }
    }

    private func closeWrite(_ attribute: Attribute, _ socket: Socket, why: String) {
        guard Self.remove(socket, of: attribute, from: &writeSockets) != nil else { return }
        logger.info(
            "write socket closed", metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "reason": "\(why)"])
    }
}
