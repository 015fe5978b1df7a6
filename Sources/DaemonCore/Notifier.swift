// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging

/// The notification path, in one place: a change of a subscribed characteristic's value
/// -> its lane (latest value, or a queue of every value) -> the pacer (spacing per
/// characteristic) -> the sink (the BlueZ layer's signal).
///
/// - `delivery: "latest"`: the pacer sends the value current at the slot; values
///   replaced before it are dropped.
/// - `delivery: "all"`: each change while someone is subscribed is queued (at most
///   `queueLength`) and the queue drains one value per slot, in order. `admits(_:)` is
///   false while the queue is full; the write pipeline then refuses `SetValue` with
///   `queueFull`, and once a value has left the queue `onReady` is called (the control
///   API's `ReadyToUpdate`), as CoreBluetooth's `isReady(toUpdateSubscribers:)` follows a
///   refused `updateValue`. When the last central unsubscribes the queue is emptied.
/// - Indications (`indicate` without `notify`): at most one is in flight; the next goes
///   out after bluetoothd's `Confirm` or `confirmTimeout`, so bluetoothd's queue cannot
///   grow without bound. bluetoothd calls `Confirm` once per subscribed central; the
///   first one releases the next indication.
///
/// Observes its database from `init`; a reload that rebuilds the tree makes a new one for
/// the new database. Lives on the loop thread.
public final class Notifier {
    /// How long an indication may wait for its `Confirm` before the next one goes out
    /// (a central has 30 s to confirm, and bluetoothd calls `Confirm` on time-out too).
    public static let confirmTimeout: Duration = .seconds(5)

    private final class Lane {
        let delivery: Delivery
        let capacity: Int
        let waitsForConfirm: Bool
        var queue: [[UInt8]] = []
        /// Index of the next value to send in `queue` (drained from the front cheaply).
        var head = 0
        /// A `SetValue` was refused for a full queue: call `onReady` when room frees.
        var owesReady = false
        /// An indication is out and not yet confirmed; cancels its time-out.
        var awaitingConfirm: (() -> Void)?
        /// A change arrived while an indication was in flight.
        var held = false

        init(delivery: Delivery, capacity: Int, waitsForConfirm: Bool) {
            self.delivery = delivery
            self.capacity = capacity
            self.waitsForConfirm = waitsForConfirm
        }

        var count: Int { queue.count - head }

        func pop() -> [UInt8]? {
            guard head < queue.count else { return nil }
            let value = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            return value
        }

        func clear() {
            queue.removeAll(keepingCapacity: true)
            head = 0
            held = false
            awaitingConfirm?()
            awaitingConfirm = nil
        }
    }

    public let pacer: NotificationPacer
    /// Receives what goes out; nil drops notifications (nothing is exported yet).
    public weak var sink: (any NotificationSink)?
    /// A characteristic whose `SetValue` was refused for a full queue has room again.
    public var onReady: ((Attribute) -> Void)?
    /// The clock that paces notifications (the loop's in the daemon, a manual one in
    /// tests); the BlueZ module times how long held notifications may wait on it too.
    public let clock: LoopClock
    private let logger: Logger
    /// Lanes of characteristics with `delivery: "all"` or indications only; the others
    /// take the pacer's path alone. Read through `findLane(_:)`.
    private var lanes: [String: Lane] = [:]
    /// Values dropped because a queue was full when a non-program change arrived.
    public private(set) var droppedCount = 0
    /// Indications sent without a `Confirm` in time.
    public private(set) var unconfirmedCount = 0

    public init(
        configuration: Configuration, database: AttributeDatabase, clock: LoopClock, mtu: MTUTracker, logger: Logger
    ) {
        self.clock = clock
        self.logger = logger
        var deliver: ((Attribute) -> Bool)?
        pacer = NotificationPacer(
            configuration: configuration, clock: clock, mtu: mtu, logger: logger, send: { deliver?($0) ?? false })
        for characteristic in configuration.services.flatMap(\.characteristics) {
            let indicatesOnly = characteristic.flags.allowsIndicate && !characteristic.flags.allowsNotify
            guard characteristic.delivery == .all || indicatesOnly else { continue }
            lanes[characteristic.id] = Lane(
                delivery: characteristic.delivery, capacity: characteristic.queueLength, waitsForConfirm: indicatesOnly)
        }
        deliver = { [unowned self] attribute in self.deliver(attribute) }
        database.observeChanges { [weak self] attribute, origin in
            guard let self, attribute.isNotifying else { return }
            self.changed(attribute, origin)
        }
        database.observeSubscriptions { [weak self] attribute in
            guard let self, !attribute.isNotifying, let lane = self.findLane(attribute) else { return }
            let wasFull = lane.count >= lane.capacity
            lane.clear()
            if wasFull { self.readyIfOwed(attribute, lane) }
        }
    }

    /// The lane of `attribute`, if it has one. Most definitions have no lane at all: then
    /// no lookup by id is made on the notification path.
    private func findLane(_ attribute: Attribute) -> Lane? {
        lanes.isEmpty ? nil : lanes[attribute.id]
    }

    private func changed(_ attribute: Attribute, _ origin: ValueChangeOrigin) {
        guard let lane = findLane(attribute), lane.delivery == .all else {
            pacer.submit(attribute)
            return
        }
        guard lane.count < lane.capacity else {
            // Only changes that did not ask first land here (a central's write, a restore);
            // the program's SetValue and value sources check `admits` before storing.
            droppedCount += 1
            logger.warning(
                "notification queue full; value not queued",
                metadata: ["gatt.id": "\(attribute.id)", "origin": "\(origin)", "capacity": "\(lane.capacity)"])
            return
        }
        lane.queue.append(attribute.value)
        if lane.count == 1 { pacer.submit(attribute) }
    }

    /// The pacer's slot came: the next value goes to the sink, unless an indication is
    /// still waiting for its `Confirm`.
    private func deliver(_ attribute: Attribute) -> Bool {
        guard let sink else { return false }
        guard let lane = findLane(attribute) else { return sink.send(attribute, value: attribute.value) }
        if lane.awaitingConfirm != nil {
            lane.held = true
            return false
        }
        let value: [UInt8]
        if lane.delivery == .all {
            guard let next = lane.pop() else { return false }
            value = next
        } else {
            value = attribute.value
        }
        lane.held = false
        guard sink.send(attribute, value: value) else { return false }
        if lane.waitsForConfirm { awaitConfirm(attribute, lane) }
        if lane.delivery == .all {
            readyIfOwed(attribute, lane)
            if lane.count > 0 && lane.awaitingConfirm == nil { pacer.submit(attribute) }
        }
        return true
    }

    private func awaitConfirm(_ attribute: Attribute, _ lane: Lane) {
        lane.awaitingConfirm = clock.at(clock.now() + Self.confirmTimeout) { [weak self, unowned lane] in
            lane.awaitingConfirm = nil
            guard let self else { return }
            self.unconfirmedCount += 1
            self.logger.warning(
                "indication not confirmed in time; sending the next one",
                metadata: ["gatt.id": "\(attribute.id)", "timeout": "\(Self.confirmTimeout)"])
            self.resume(attribute, lane)
        }
    }

    /// An indication was confirmed or timed out: what waited goes out.
    private func resume(_ attribute: Attribute, _ lane: Lane) {
        if lane.held || lane.count > 0 { pacer.submit(attribute) }
    }

    private func readyIfOwed(_ attribute: Attribute, _ lane: Lane) {
        guard lane.owesReady, lane.count < lane.capacity else { return }
        lane.owesReady = false
        onReady?(attribute)
    }

    /// The queue length of `attribute` when it queues every value (`delivery: "all"`).
    public func queueCapacity(_ attribute: Attribute) -> Int? {
        guard let lane = findLane(attribute), lane.delivery == .all else { return nil }
        return lane.capacity
    }

    /// Values of `attribute` waiting to be notified.
    public func queuedCount(_ attribute: Attribute) -> Int { findLane(attribute)?.count ?? 0 }

    /// Whether one more value of `attribute` can be queued (always, when it is not
    /// queued or nobody is subscribed).
    public func hasRoom(_ attribute: Attribute) -> Bool {
        guard attribute.isNotifying, let lane = findLane(attribute), lane.delivery == .all else { return true }
        return lane.count < lane.capacity
    }

    /// `hasRoom`, for a program's `SetValue`: a refusal is remembered, and `onReady`
    /// follows when room frees.
    public func admits(_ attribute: Attribute) -> Bool {
        guard !hasRoom(attribute) else { return true }
        findLane(attribute)?.owesReady = true
        return false
    }

    /// Whether an indication of `attribute` is out and not yet confirmed.
    public func isAwaitingConfirm(_ attribute: Attribute) -> Bool { findLane(attribute)?.awaitingConfirm != nil }

    /// A central confirmed an indication of `attribute`.
    public func confirmed(_ attribute: Attribute) {
        guard let lane = findLane(attribute), let cancel = lane.awaitingConfirm else { return }
        cancel()
        lane.awaitingConfirm = nil
        resume(attribute, lane)
    }
}
