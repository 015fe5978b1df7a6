// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore
internal import Logging
internal import Mainloop
internal import SystemCalls

/// The socket path between gattd and bluetoothd (docs/bluez-contract.md, "Sockets"):
/// `AcquireNotify` and `AcquireWrite` are answered with one end of a `SOCK_SEQPACKET`
/// pair, and from then on each notification or write is one datagram, with no D-Bus
/// message per value.
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

        init(fd: Int32, device: String?, mtu: Int) {
            self.fd = fd
            self.device = device
            self.mtu = mtu
        }

        func close() {
            watch?.cancel()
            watch = nil
            SeqPacketSocket.close(fd)
        }
    }

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

    /// The ATT MTU bluetoothd's options leave out only when it knows none (the minimum).
    static let defaultMTU = 23
    /// Datagrams read from one socket per loop turn, so one busy central cannot starve the
    /// rest of the loop.
    static let datagramsPerTurn = 64

    private let loop: EventLoop
    private let service: RequestService
    private let logger: Logger
    private var notifySockets: [String: [Socket]] = [:]
    /// How this bluetoothd shares notify sockets, from its release (`NotifySocketModel`).
    var model: NotifySocketModel = .unknown
    private var writeSockets: [String: [Socket]] = [:]
    /// Characteristics whose lost shared socket bluetoothd has not read empty yet, by id.
    /// Read on every notification: unchecked, as only the loop thread touches it and no
    /// access overlaps, so the hot path pays no runtime exclusivity check.
    @exclusivity(unchecked) private var switching: [String: Switch] = [:]
    /// A central named by bluetoothd (the `device` option) subscribed through its own notify
    /// socket (`true`) or left (`false`): CoreBluetooth's per-central subscription.
    var onCentralSubscription: ((Attribute, String, Bool) -> Void)?
    /// One datagram: the longest attribute value and one byte more, to recognise longer ones.
    private var buffer = [UInt8](repeating: 0, count: 513)

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
        notifySockets[attribute.id, default: []].append(socket)
        _ = service.setNotifying(attribute, true)
        logger.info(
            "subscribed", metadata: ["gatt.id": "\(attribute.id)", "gatt.uuid": "\(attribute.uuid)", "path": "socket",
                "device": "\(socket.device ?? "")", "mtu": "\(socket.mtu)"])
        if let device = socket.device { onCentralSubscription?(attribute, device, true) }
        return (peer, UInt16(clamping: socket.mtu))
    }

    /// A shared socket is acquired once per characteristic; a second `AcquireNotify` while
    /// one is open means bluetoothd lost the first (5.66 when two centrals subscribe at
    /// once: it keeps reading it, so every value would reach each central twice, and never
    /// closes it, so the subscription would never end). The open ones are closed, those
    /// still holding values bluetoothd has not read once it has (`Switch`).
    private func closeLost(_ attribute: Attribute) {
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
    private func finishSwitch(_ attribute: Attribute, _ change: Switch, late: Bool) {
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
    private func abandonSwitch(_ id: String) {
        switching.removeValue(forKey: id)?.cancel()
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

    // MARK: - Notifications

    /// Writes `value` as one datagram to each notify socket of `attribute`; nil when it has
    /// none (the caller uses the signal path). False when no socket took it.
    func send(_ attribute: Attribute, value: [UInt8]) -> Bool? {
        // The signal path pays one emptiness check, not a lookup, when no socket is open.
        guard !notifySockets.isEmpty, let sockets = notifySockets[attribute.id], !sockets.isEmpty else { return nil }
        if !switching.isEmpty, let change = switching[attribute.id] {
            guard change.held.count < Self.heldLimit else {
                change.dropped += 1
                return false
            }
            change.held.append(value)
            return true
        }
        var delivered = false
        for socket in sockets {
            let result = value.withUnsafeBytes { SeqPacketSocket.send(socket.fd, $0) }
            switch result {
            case .sent:
                delivered = true
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
            case .sent: continue
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
    private func notifySocketReady(_ attribute: Attribute, _ socket: Socket, _ events: IOEvents) {
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

    private func closeNotify(_ attribute: Attribute, _ socket: Socket, why: String) {
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
    private static func remove(_ socket: Socket, of attribute: Attribute, from table: inout [String: [Socket]]) -> Int? {
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

    // MARK: - Writes

    private func writeSocketReady(_ attribute: Attribute, _ socket: Socket, _ events: IOEvents) {
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
