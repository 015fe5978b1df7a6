// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DaemonCore
internal import Logging
internal import Mainloop
internal import SystemCalls

/// A workaround for one BlueZ release, 5.66 (docs/bluez-versions.md): its notify socket
/// is shared by every subscriber of a characteristic, and when two centrals subscribe at
/// once it acquires a second one and loses the first. It keeps reading the lost socket, so
/// every value would reach each central twice, and never closes it, so the subscription
/// would never end. gattd closes the lost socket, once bluetoothd has read what it holds;
/// until then values for the new socket wait (`Switch`), or a later one could reach the
/// centrals before an earlier one.
extension AcquiredSockets {
    /// A shared socket bluetoothd lost (5.66) that still holds values it has not read. It
    /// reads both sockets, in either order, so values for the new socket wait until the old
    /// one is read empty (or `switchLimit` passes); then it is closed and they are sent.
    /// The poll watches the kernel (a loop timer); the limit is a wait of notifications, so
    /// it runs on the clock that paces them (the loop's in the daemon, a test's by hand).
    final class Switch {
        var old: [Socket]
        /// Values sent meanwhile, in order (at most `heldLimit`).
        var held: [[UInt8]] = []
        var dropped = 0
        var poll: LoopTimer?
        /// Cancels the limit's timer.
        var cancelLimit: (() -> Void)?

        init(old: [Socket]) { self.old = old }

        /// Keeps `value` to send once the switch ends; false when `heldLimit` values wait
        /// already (it is dropped and counted).
        func hold(_ value: [UInt8]) -> Bool {
            guard held.count < AcquiredSockets.heldLimit else {
                dropped += 1
                return false
            }
            held.append(value)
            return true
        }

        func cancel() {
            poll?.cancel()
            cancelLimit?()
            cancelLimit = nil
            for socket in old { socket.close() }
            old = []
        }
    }

    /// How often a lost socket is checked for unread values, and for how long at most.
    static let switchPoll = Duration.milliseconds(2)
    static let switchLimit = Duration.milliseconds(200)
    /// Values held for one characteristic during a switch; later ones are dropped, logged.
    static let heldLimit = 64

    /// A shared socket is acquired once per characteristic; a second `AcquireNotify` while
    /// one is open means bluetoothd lost the first (5.66 when two centrals subscribe at
    /// once: it keeps reading it, so every value would reach each central twice, and never
    /// closes it, so the subscription would never end). The open ones are closed, those
    /// still holding values bluetoothd has not read once it has (`Switch`).
    func closeLost(_ attribute: Attribute) {
        guard let lost = notifySockets.removeValue(forKey: attribute.id) else { return }
        var unread: [Socket] = []
        for socket in lost {
            logger.warning(
                "bluetoothd acquired a second shared notify socket: closed the one it lost",
                metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")"])
            if let device = socket.device { onCentralSubscription?(attribute, device, false) }
            if Self.readEmpty(socket) {
                socket.close()
            } else {
                socket.watch?.cancel()
                socket.watch = nil
                unread.append(socket)
            }
        }
        guard !unread.isEmpty else { return }
        logger.info(
            "values for the new notify socket wait until bluetoothd reads the one it lost",
            metadata: ["gatt.id": "\(attribute.id)", "limit": "\(Self.switchLimit)"])
        if let running = switching[attribute.id] {
            running.old += unread
            return
        }
        let change = Switch(old: unread)
        switching[attribute.id] = change
        change.poll = loop.timer(after: Self.switchPoll, repeating: Self.switchPoll) { [unowned self, weak change] in
            guard let change else { return }
            change.old.removeAll { socket in
                guard Self.readEmpty(socket) else { return false }
                socket.close()
                return true
            }
            if change.old.isEmpty { self.finishSwitch(attribute, change, late: false) }
        }
        let clock = service.runtime.notifier.clock
        change.cancelLimit = clock.at(clock.now() + Self.switchLimit) { [unowned self, weak change] in
            guard let change else { return }
            self.finishSwitch(attribute, change, late: true)
        }
    }

    /// Whether bluetoothd has read everything gattd wrote to `socket` (or cannot any more).
    private static func readEmpty(_ socket: Socket) -> Bool {
        if case .success(let bytes) = SeqPacketSocket.unreadByPeer(socket.fd), bytes > 0 { return false }
        return true
    }

    /// The lost socket is read empty (or `late`: the limit passed): it is closed and the
    /// values held go to the sockets the characteristic has now.
    func finishSwitch(_ attribute: Attribute, _ change: Switch, late: Bool) {
        guard switching[attribute.id] === change else { return }
        switching[attribute.id] = nil
        if late {
            logger.warning(
                "bluetoothd did not read the notify socket it lost in time: closed it unread",
                metadata: ["gatt.id": "\(attribute.id)", "limit": "\(Self.switchLimit)"])
        }
        change.cancel()
        if change.dropped > 0 {
            logger.warning(
                "notifications dropped while bluetoothd read the socket it lost",
                metadata: ["gatt.id": "\(attribute.id)", "dropped": "\(change.dropped)"])
        }
        for value in change.held { _ = send(attribute, value: value) }
    }

    /// Ends a switch without sending what it holds (the subscription or the tree ended).
    func abandonSwitch(_ id: String) {
        switching.removeValue(forKey: id)?.cancel()
    }
}
