// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [{"uuid": "180D", "characteristics": [
      {"id": "stream", "uuid": "2A37", "flags": ["read", "notify"], "notifyIntervalMs": 10,
       "delivery": "all", "queueLength": 4},
      {"id": "alarm", "uuid": "2A38", "flags": ["read", "indicate"], "notifyIntervalMs": 10},
      {"id": "latest", "uuid": "2A39", "flags": ["read", "notify"], "notifyIntervalMs": 10}
    ]}]}
    """

/// `delivery: "all"` queues, `ReadyToUpdate`, and indications that wait for `Confirm`.
@Suite("Notifier: queued delivery and confirmed indications")
struct NotifierTests {
    private final class Fixture: NotificationSink {
        let clock = ManualScheduler()
        let database: AttributeDatabase
        let service: RequestService
        let runtime: Runtime
        var notifier: Notifier { service.runtime.notifier }
        var sent: [(id: String, value: [UInt8])] = []
        var ready: [String] = []

        init() throws {
            let configuration = try liveConfiguration(definition)
            (service, runtime) = try unsavedService(configuration, scheduler: clock)
            database = runtime.database
            service.runtime.notifier.sink = self
            service.onReadyToUpdate = { [unowned self] in ready.append($0.id) }
            for attribute in database.attributes { database.setNotifying(attribute, true) }
        }

        func send(_ attribute: Attribute, value: [UInt8]) -> Bool {
            sent.append((attribute.id, value))
            return true
        }

        /// `SetValue` from a program; the outcome in words.
        @discardableResult
        func set(_ id: String, _ value: [UInt8]) -> String {
            var outcome = "pending"
            service.set(database[id]!, to: value) { result in
                switch result {
                case .success: outcome = "ok"
                case .failure(let failure): outcome = "\(failure)"
                }
            }
            return outcome
        }

        func values(_ id: String) -> [[UInt8]] { sent.filter { $0.id == id }.map(\.value) }
    }

    @Test("every value of a delivery-all characteristic goes out, in order, one per slot")
    func allValuesInOrder() throws {
        let f = try Fixture()
        for value in 1...4 { #expect(f.set("stream", [UInt8(value)]) == "ok") }
        #expect(f.values("stream") == [[1]], "the first goes out at once, the rest wait for their slots")
        #expect(f.notifier.queuedCount(f.database["stream"]!) == 3)
        f.clock.advance(by: .milliseconds(35))
        #expect(f.values("stream") == [[1], [2], [3], [4]])
        #expect(f.notifier.queuedCount(f.database["stream"]!) == 0)
    }

    @Test("with delivery all, a sample equal to the current value is a sample too")
    func equalSamplesAreSent() throws {
        let f = try Fixture()
        for _ in 1...3 { #expect(f.set("stream", [9]) == "ok") }
        f.clock.advance(by: .milliseconds(30))
        #expect(f.values("stream") == [[9], [9], [9]])
    }

    @Test("a full queue refuses SetValue with QueueFull, changes nothing, and ReadyToUpdate follows once")
    func queueFullThenReady() throws {
        let f = try Fixture()
        for value in 1...5 { #expect(f.set("stream", [UInt8(value)]) == "ok") }  // 1 sent, 4 queued
        #expect(f.set("stream", [6]) == "queueFull(capacity: 4)")
        #expect(f.database["stream"]!.value == [5], "the refused value was not stored")
        #expect(f.ready.isEmpty)
        f.clock.advance(by: .milliseconds(10))
        #expect(f.ready == ["stream"], "room again after one slot")
        #expect(f.set("stream", [6]) == "ok")
        f.clock.advance(by: .milliseconds(100))
        #expect(f.values("stream") == (1...6).map { [UInt8($0)] }, "no value lost")
        #expect(f.ready == ["stream"], "ReadyToUpdate only after a refusal")
    }

    @Test("the last unsubscribe empties the queue; nothing is queued while nobody listens")
    func unsubscribeEmptiesTheQueue() throws {
        let f = try Fixture()
        for value in 1...3 { f.set("stream", [UInt8(value)]) }
        f.database.setNotifying(f.database["stream"]!, false)
        #expect(f.notifier.queuedCount(f.database["stream"]!) == 0)
        for value in 10...20 { #expect(f.set("stream", [UInt8(value)]) == "ok") }
        f.clock.advance(by: .milliseconds(100))
        #expect(f.values("stream") == [[1]])
    }

    @Test("latest delivery still drops values replaced before their slot")
    func latestStillCoalesces() throws {
        let f = try Fixture()
        for value in 1...5 { f.set("latest", [UInt8(value)]) }
        f.clock.advance(by: .milliseconds(20))
        #expect(f.values("latest") == [[1], [5]])
    }

    @Test("an indication waits for Confirm before the next one goes out")
    func indicationsWaitForConfirm() throws {
        let f = try Fixture()
        let alarm = f.database["alarm"]!
        f.set("alarm", [1])
        #expect(f.notifier.isAwaitingConfirm(alarm))
        f.clock.advance(by: .milliseconds(20))
        f.set("alarm", [2])
        f.clock.advance(by: .milliseconds(50))
        #expect(f.values("alarm") == [[1]], "no second indication before Confirm")
        f.service.confirm(alarm)
        f.clock.advance(by: .milliseconds(1))
        #expect(f.values("alarm") == [[1], [2]])
        #expect(alarm.confirmations == 1)
    }

    @Test("an unconfirmed indication stops blocking after the confirm time-out")
    func confirmTimeout() throws {
        let f = try Fixture()
        f.set("alarm", [1])
        f.set("alarm", [2])
        f.clock.advance(by: Notifier.confirmTimeout - .milliseconds(1))
        #expect(f.values("alarm") == [[1]])
        f.clock.advance(by: .milliseconds(2))
        #expect(f.values("alarm") == [[1], [2]])
        #expect(f.notifier.unconfirmedCount == 1)
    }
}
