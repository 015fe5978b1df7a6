// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore
internal import Logging
internal import Mainloop
internal import SystemCalls

/// The sockets bluetoothd acquired (docs/bluez-contract.md, "Sockets"): `AcquireNotify`
/// and `AcquireWrite` are answered with one end of a `SOCK_SEQPACKET` pair, and from then on
/// each notification or write is one datagram, with no D-Bus message per value. This file
/// keeps them: making them, which sockets each characteristic holds, and closing them. What
/// is done with them is in its own file each:
/// - `AcquiredSockets+Notifications.swift`: notifications written to the notify sockets,
///   and what bluetoothd writes back on them;
/// - `AcquiredSockets+WriteReader.swift`: the values centrals write, read from the write
///   sockets;
/// - `AcquiredSockets+SharedSocketSwitch.swift`: bluetoothd 5.66 only, a second
///   `AcquireNotify` that replaces the shared socket it lost.
///
/// - Notify: bluetoothd 5.66 acquires one socket per characteristic, shared by every
///   subscribed central, and closes it when the last one unsubscribes; from 5.69 it
///   acquires one per central, and from 5.76 a datagram on it goes to that central only.
///   The options name a `device` either way (on 5.66 the first subscriber), so `model`
///   (from the adapter) says which. A notification is written to every socket the
///   characteristic has, and the characteristic is subscribed while it has one; on a
///   shared socket a second `AcquireNotify` closes the first, which bluetoothd lost, once
///   bluetoothd has read what it holds (`Switch`): until then new values wait, or a later
///   one could reach the centrals before an earlier one. A
///   value for chosen centrals goes to their sockets only, where `model` allows. From
///   5.80 bluetoothd writes a byte `0x01` back when a central confirms an indication.
/// - Write: bluetoothd acquires a socket on a central's first write (one per central from
///   5.69) and sends each written value as one datagram, acknowledged to the central
///   before gattd reads it. Each goes through the same pipeline as `WriteValue`
///   (validation, handler or hook, store, save, notify); one that is refused is dropped
///   and logged, since no ATT error can go back.
///
/// Lives on the loop thread. `closeAll()` before the tree it serves goes away.
final class AcquiredSockets {
    /// Which socket paths a characteristic uses.
    struct Kinds: OptionSet, Sendable {
        let rawValue: UInt8
        static let notify = Kinds(rawValue: 1 << 0)
        static let write = Kinds(rawValue: 1 << 1)
    }

    /// One acquired socket: gattd's end, which central (when bluetoothd says) and its MTU.
    final class Socket {
        let fd: Int32
        let device: String?
        let mtu: Int
        var watch: IOWatch?
        /// Notifications dropped in a row because the socket was full (logged once, at the
        /// first and when it drains).
        var dropped = 0
        /// Whether the unread check judges this socket (`decideUnreadCheck`), the datagrams
        /// sent since the last check that bluetoothd reads it, and the pending check's
        /// cancel (`AcquiredSockets+UnreadCheck.swift`).
        var unreadChecked = false
        var sentSinceCheck = 0
        var cancelUnreadCheck: (() -> Void)?

        init(fd: Int32, device: String?, mtu: Int) {
            self.fd = fd
            self.device = device
            self.mtu = mtu
        }

        func close() {
            cancelUnreadCheck?()
            cancelUnreadCheck = nil
            watch?.cancel()
            watch = nil
            SeqPacketSocket.close(fd)
        }

        /// A pending unread check holds this socket and its owner `unowned`: a socket that
        /// goes without `close()` (its owner dropped unclosed) takes its check with it, so
        /// the check never runs on freed objects.
        deinit {
            cancelUnreadCheck?()
        }
    }

    /// The ATT MTU bluetoothd's options leave out only when it knows none (the minimum).
    static let defaultMTU = 23
    /// Datagrams read from one socket per loop turn, so one busy central cannot starve the
    /// rest of the loop.
    static let datagramsPerTurn = 64

    let loop: EventLoop
    let service: RequestService
    let logger: Logger
    /// The notify sockets of each characteristic, by id. Read on every notification (an
    /// emptiness test on the signal path, the lookup on the socket path): unchecked, like
    /// `switching`, as only the loop thread touches it and every access ends before anything
    /// that could change it runs (`send` iterates a copy of the array, `closeNotify` mutates
    /// after), so the hot path pays no runtime exclusivity check.
    @exclusivity(unchecked) var notifySockets: [String: [Socket]] = [:]
    /// How this bluetoothd shares notify sockets, from its release (`NotifySocketModel`).
    /// Decides which notify sockets the unread check judges (`decideUnreadCheck`).
    var model: NotifySocketModel = .unknown {
        didSet {
            guard model != oldValue else { return }
            for socket in notifySockets.values.joined() { decideUnreadCheck(socket) }
        }
    }
    var writeSockets: [String: [Socket]] = [:]
    /// Characteristics whose lost shared socket bluetoothd has not read empty yet, by id.
    /// Read on every notification: unchecked, as only the loop thread touches it and no
    /// access overlaps, so the hot path pays no runtime exclusivity check.
    @exclusivity(unchecked) var switching: [String: Switch] = [:]
    /// A central named by bluetoothd (the `device` option) subscribed through its own notify
    /// socket (`true`) or left (`false`): CoreBluetooth's per-central subscription.
    var onCentralSubscription: ((Attribute, String, Bool) -> Void)?
    /// One datagram: the longest attribute value and one byte more, to recognise longer ones.
    var buffer = [UInt8](repeating: 0, count: 513)

    init(loop: EventLoop, service: RequestService, logger: Logger) {
        self.loop = loop
        self.service = service
        self.logger = logger
    }

    /// How many notify and write sockets characteristic `id` holds now (one shared or one
    /// per central; `ListCharacteristics`).
    func counts(_ id: String) -> (notify: Int, write: Int) {
        (notifySockets[id]?.count ?? 0, writeSockets[id]?.count ?? 0)
    }

    /// The characteristics each central is subscribed to through a socket of its own, by
    /// device path; nil unless bluetoothd gives each central its own socket.
    func subscriptionsByDevice() -> [String: [String]]? {
        guard model == .perCentral || model == .targeted else { return nil }
        var table: [String: [String]] = [:]
        for (id, sockets) in notifySockets {
            for case let device? in sockets.map(\.device) { table[device, default: []].append(id) }
        }
        return table.mapValues { $0.sorted() }
    }

    /// Whether `attribute` has a notify or write socket now (`NotifyAcquired`, `WriteAcquired`).
    func hasSockets(_ kind: Kinds, _ attribute: Attribute) -> Bool {
        let sockets = kind == .notify ? notifySockets[attribute.id] : writeSockets[attribute.id]
        return !(sockets?.isEmpty ?? true)
    }

    // MARK: - Acquiring

    /// `AcquireNotify`/`AcquireWrite(options) -> (fd, mtu)`: makes the socket, hands
    /// bluetoothd's end and the MTU to `reply` (which must copy the descriptor into its
    /// message), then closes gattd's copy of that end.
    func acquire(
        _ kind: Kinds, _ attribute: Attribute, _ request: AttributeRequest, reply: (Int32, UInt16) -> Void
    ) throws(DBusError) {
        let (peer, mtu) = kind == .notify ? try acquireNotify(attribute, request) : try acquireWrite(attribute, request)
        reply(peer, mtu)
        SeqPacketSocket.close(peer)
    }

    /// A new notify socket for `attribute`, which is subscribed from now on.
    private func acquireNotify(_ attribute: Attribute, _ request: AttributeRequest) throws(DBusError) -> (Int32, UInt16) {
        let (socket, peer) = try open(attribute, request)
        socket.watch = loop.watch(fd: socket.fd, events: .readable) { [unowned self, unowned socket] events in
            self.notifySocketReady(attribute, socket, events)
        }
        if socket.device == nil || model == .shared { closeLost(attribute) }
        decideUnreadCheck(socket)
        notifySockets[attribute.id, default: []].append(socket)
        _ = service.setNotifying(attribute, true)
        logger.info(
            "subscribed", metadata: ["gatt.id": "\(attribute.id)", "gatt.uuid": "\(attribute.uuid)", "path": "socket",
                "device": "\(socket.device ?? "")", "mtu": "\(socket.mtu)"])
        if let device = socket.device { onCentralSubscription?(attribute, device, true) }
        return (peer, UInt16(clamping: socket.mtu))
    }

    /// A new socket on which bluetoothd sends the values centrals write to `attribute`.
    private func acquireWrite(_ attribute: Attribute, _ request: AttributeRequest) throws(DBusError) -> (Int32, UInt16) {
        let (socket, peer) = try open(attribute, request)
        socket.watch = loop.watch(fd: socket.fd, events: .readable) { [unowned self, unowned socket] events in
            self.writeSocketReady(attribute, socket, events)
        }
        writeSockets[attribute.id, default: []].append(socket)
        logger.info(
            "write socket acquired",
            metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "mtu": "\(socket.mtu)"])
        return (peer, UInt16(clamping: socket.mtu))
    }

    /// A new pair: gattd's end in a `Socket`, and bluetoothd's end for the reply (the
    /// caller closes it once the reply holds its own copy).
    private func open(_ attribute: Attribute, _ request: AttributeRequest) throws(DBusError) -> (Socket, Int32) {
        let ends: (Int32, Int32)
        do {
            ends = try SeqPacketSocket.pair()
        } catch {
            logger.error(
                "could not make a socket for bluetoothd", metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
            // Failed: bluetoothd gives up on the socket and, for notifications, does not
            // fall back to StartNotify (docs/bluez-contract.md, "Sockets").
            throw BlueZError.failure("cannot create a socket: \(error)")
        }
        let mtu = request.mtu ?? Self.defaultMTU
        if let known = request.mtu { service.mtu.record(mtu: known, device: request.device) }
        return (Socket(fd: ends.0, device: request.device, mtu: mtu), ends.1)
    }

    // MARK: - Closing

    /// bluetoothd closed a notify socket (its central, or for 5.66 the last one,
    /// unsubscribed) or it failed: the characteristic is unsubscribed when none is left.
    func closeNotify(_ attribute: Attribute, _ socket: Socket, why: String) {
        guard let left = Self.remove(socket, of: attribute, from: &notifySockets) else { return }
        logger.info(
            "unsubscribed",
            metadata: ["gatt.id": "\(attribute.id)", "path": "socket", "device": "\(socket.device ?? "")", "reason": "\(why)"])
        if let device = socket.device { onCentralSubscription?(attribute, device, false) }
        if left == 0 {
            abandonSwitch(attribute.id)
            _ = service.setNotifying(attribute, false)
        }
    }

    /// Takes `socket` out of `table` and closes it; how many sockets `attribute` has left,
    /// nil when `socket` was not in the table (closed already).
    static func remove(_ socket: Socket, of attribute: Attribute, from table: inout [String: [Socket]]) -> Int? {
        guard var sockets = table[attribute.id], let index = sockets.firstIndex(where: { $0 === socket }) else {
            return nil
        }
        sockets.remove(at: index)
        table[attribute.id] = sockets.isEmpty ? nil : sockets
        socket.close()
        return sockets.count
    }

    /// `attribute` stopped notifying for another reason (bluetoothd or the adapter went
    /// away): its sockets are closed.
    func subscriptionEnded(_ attribute: Attribute) {
        abandonSwitch(attribute.id)
        guard let sockets = notifySockets.removeValue(forKey: attribute.id) else { return }
        for socket in sockets {
            socket.close()
            if let device = socket.device { onCentralSubscription?(attribute, device, false) }
        }
    }

    /// Takes over `previous`'s sockets of characteristic `id` for `attribute`, the same
    /// characteristic in a reloaded database whose object bluetoothd keeps (its service did
    /// not change): bluetoothd goes on using them, and `attribute` is subscribed if any
    /// notify socket came along.
    func adopt(_ id: String, from previous: AcquiredSockets, as attribute: Attribute) {
        if let sockets = previous.notifySockets.removeValue(forKey: id), !sockets.isEmpty {
            for socket in sockets {
                socket.watch?.cancel()
                socket.watch = loop.watch(fd: socket.fd, events: .readable) { [unowned self, unowned socket] events in
                    self.notifySocketReady(attribute, socket, events)
                }
                // The previous owner's unread check (`AcquiredSockets+UnreadCheck.swift`)
                // ends; the next datagram sent arms this one's.
                socket.cancelUnreadCheck?()
                socket.cancelUnreadCheck = nil
                decideUnreadCheck(socket)
            }
            notifySockets[id] = sockets
            _ = service.setNotifying(attribute, true)
        }
        if let sockets = previous.writeSockets.removeValue(forKey: id), !sockets.isEmpty {
            for socket in sockets {
                socket.watch?.cancel()
                socket.watch = loop.watch(fd: socket.fd, events: .readable) { [unowned self, unowned socket] events in
                    self.writeSocketReady(attribute, socket, events)
                }
            }
            writeSockets[id] = sockets
        }
    }

    /// Closes every socket (the tree is being replaced or the daemon stops); bluetoothd
    /// sees its ends hang up and acquires again on the next subscription or write.
    func closeAll() {
        for socket in notifySockets.values.joined() { socket.close() }
        for socket in writeSockets.values.joined() { socket.close() }
        for change in switching.values { change.cancel() }
        notifySockets.removeAll()
        writeSockets.removeAll()
        switching.removeAll()
    }
}
