// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging

/// Back-pressure for notifications (docs/bluez-contract.md §6: bluetoothd has none, and
/// queues every PropertiesChanged it receives for every subscribed central).
///
/// Per characteristic, notifications keep to slots `interval(for:)` apart: the
/// characteristic's `notifyIntervalMs`, or `defaultInterval` (10 ms: never more than 100
/// per second, and longer than the 7.5 ms minimum connection interval) when it is absent
/// or 0. Times are *due* times (`LoopClock.due`): a change made by a timer's tick (a value
/// source) counts from the instant the tick was due, however late the loop ran it; any
/// other change from when it is handled. Each send moves the next slot one interval on
/// (so the long-run rate never exceeds one per interval), but never less than half an
/// interval after the send's due time: a producer ticking at the interval is not thinned
/// by timer jitter, and no two notifications are due closer than half an interval. The
/// first send's due time sets the grid, so a value source's slots lie on its own ticks:
/// a late wake-up (the first tick after a subscription is often the slowest) does not
/// push the grid behind the source, which would make every later tick early and cost a
/// second wake-up per notification. A change due less than an eighth of an interval
/// before its slot counts as on time and goes out at once. An earlier change marks the
/// characteristic pending and one timer sends it at the slot, with the value it has then:
/// the latest value wins, older ones are dropped, and no queue exists.
/// A value longer than `MTUTracker.notificationPayload` is sent (bluetoothd cuts it) and
/// warned about once per characteristic.
public final class NotificationPacer {
    public static let defaultInterval: Duration = .milliseconds(10)

    private final class Lane {
        /// The characteristic's interval, and the eighth and half of it (`Duration`
        /// division is 128-bit arithmetic: done once here, not per notification).
        let interval: Duration
        let onTimeMargin: Duration
        let minimumGap: Duration
        /// The earliest time of the next notification; nil before the first.
        var nextSlot: ContinuousClock.Instant?
        var cancelPending: (() -> Void)?
        var warnedTruncation = false

        init(interval: Duration) {
            self.interval = interval
            onTimeMargin = interval / 8
            minimumGap = interval / 2
        }
    }

    private let intervals: [String: Duration]
    private let clock: LoopClock
    private let mtu: MTUTracker
    private let logger: Logger
    private let send: (Attribute) -> Bool
    private var lanes: [String: Lane] = [:]
    /// Notifications sent.
    public private(set) var sentCount = 0
    /// Changes that replaced a pending one (dropped in favour of a later value).
    public private(set) var coalescedCount = 0
    /// Truncation warnings logged (at most one per characteristic).
    public private(set) var truncationWarnings = 0

    /// `send` emits the attribute's current value (PropertiesChanged) and says whether it
    /// went out; one that did not leaves the slot free.
    public init(
        configuration: Configuration, clock: LoopClock, mtu: MTUTracker, logger: Logger,
        send: @escaping (Attribute) -> Bool
    ) {
        var intervals: [String: Duration] = [:]
        for characteristic in configuration.services.flatMap(\.characteristics) {
            if let ms = characteristic.notifyIntervalMs, ms > 0 { intervals[characteristic.id] = .milliseconds(ms) }
        }
        self.intervals = intervals
        self.clock = clock
        self.mtu = mtu
        self.logger = logger
        self.send = send
    }

    /// The minimum spacing of notifications of characteristic `id`.
    public func interval(for id: String) -> Duration { intervals[id] ?? Self.defaultInterval }

    /// Whether a change of `id` is waiting for its interval to end.
    public func isPending(_ id: String) -> Bool { lanes[id]?.cancelPending != nil }

    /// A subscribed characteristic's value changed: send it now or when its interval ends.
    public func submit(_ attribute: Attribute) {
        let lane: Lane
        if let existing = lanes[attribute.id] {
            lane = existing
        } else {
            lane = Lane(interval: interval(for: attribute.id))
            lanes[attribute.id] = lane
        }
        if lane.cancelPending != nil {
            coalescedCount += 1
            return
        }
        let due = clock.due()
        if let slot = lane.nextSlot, due < slot - lane.onTimeMargin {
            lane.cancelPending = clock.at(slot) { [weak self, unowned lane] in
                lane.cancelPending = nil
                self?.sendNow(attribute, lane, due: slot)
            }
            return
        }
        sendNow(attribute, lane, due: due)
    }

    private func sendNow(_ attribute: Attribute, _ lane: Lane, due: ContinuousClock.Instant) {
        guard attribute.isNotifying else { return }  // The last subscriber left meanwhile.
        let limit = mtu.notificationPayload
        if attribute.value.count > limit && !lane.warnedTruncation {
            lane.warnedTruncation = true
            truncationWarnings += 1
            logger.warning(
                "notification longer than MTU-3; bluetoothd cuts it (warned once per characteristic)",
                metadata: [
                    "gatt.id": "\(attribute.id)", "length": "\(attribute.value.count)", "mtu": "\(mtu.effective)",
                    "sent": "\(limit)",
                ])
        }
        let previousSlot = lane.nextSlot
        lane.nextSlot = max((lane.nextSlot ?? due) + lane.interval, due + lane.minimumGap)
        guard send(attribute) else {
            lane.nextSlot = previousSlot
            return
        }
        sentCount += 1
    }
}
