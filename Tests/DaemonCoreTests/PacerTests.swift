// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [{"uuid": "180D", "characteristics": [
      {"id": "fast", "uuid": "2A37", "flags": ["read", "write", "notify"], "notifyIntervalMs": 50},
      {"id": "plain", "uuid": "2A38", "flags": ["read", "write", "notify"]}
    ]}]}
    """

@Suite("Notification pacer")
struct PacerTests {
    /// The notification path as the daemon has it, built by the factory: database -> Notifier
    /// -> pacer -> sink.
    private final class Fixture: NotificationSink {
        let clock = ManualScheduler()
        let service: RequestService
        let runtime: Runtime
        var database: AttributeDatabase { runtime.database }
        var notifier: Notifier { runtime.notifier }
        var mtu: MTUTracker { service.mtu }
        var pacer: NotificationPacer { notifier.pacer }
        var sent: [(id: String, value: [UInt8], at: ContinuousClock.Instant)] = []

        init() throws {
            (service, runtime) = try unsavedService(try liveConfiguration(definition), scheduler: clock)
            notifier.sink = self
            for attribute in database.attributes { database.setNotifying(attribute, true) }
        }

        func send(_ attribute: Attribute, value: [UInt8]) -> Bool {
            sent.append((attribute.id, value, clock.now))
            return true
        }

        func set(_ id: String, _ value: [UInt8]) {
            database.set(database[id]!, to: value, origin: .control)
        }
    }

    @Test("a producer ticking at the interval, woken late now and then, is not thinned")
    func jitterAtTheIntervalIsAbsorbed() throws {
        let f = try Fixture()
        // Ticks on a 50 ms grid, each woken 0-7 ms late (timer jitter): every tick's value
        // goes out at once; none waits for a slot or is dropped.
        let lateness = [0, 7, 1, 6, 0, 5, 2, 7, 0, 3]
        var previous = 0
        for (tick, late) in lateness.enumerated() {
            f.clock.advance(by: .milliseconds(tick * 50 + late - previous))
            previous = tick * 50 + late
            f.set("fast", [UInt8(tick)])
        }
        #expect(f.sent.filter { $0.id == "fast" }.map(\.value) == lateness.indices.map { [UInt8($0)] })
        #expect(f.pacer.coalescedCount == 0)
    }

    @Test("a producer on the interval whose grid runs ahead of the slots is sent at once, every tick")
    func gridAheadOfTheSlotsIsNotHeldBack() throws {
        let f = try Fixture()
        let start = f.clock.now
        // The first tick's value goes out 3 ms after the grid point (the send came late),
        // so every later tick (on the grid: 50, 100, ...) is 3 ms before its slot.
        f.clock.advance(by: .milliseconds(3))
        f.set("fast", [0])
        for tick in 1..<10 {
            f.clock.advance(by: .milliseconds(tick == 1 ? 47 : 50))
            f.set("fast", [UInt8(tick)])
            #expect(!f.pacer.isPending("fast"), "tick \(tick) waited for its slot (a second wake-up)")
        }
        let sent = f.sent.filter { $0.id == "fast" }
        #expect(sent.map(\.value) == (0..<10).map { [UInt8($0)] })
        #expect(sent.dropFirst().map { $0.at - start } == (1..<10).map { .milliseconds($0 * 50) })
        #expect(f.clock.pendingCount == 0)
    }

    @Test("a value source whose first tick ran late keeps its own grid: every later tick goes out at once")
    func lateFirstTickDoesNotShiftTheGrid() throws {
        let f = try Fixture()
        let start = f.clock.now
        // A source ticking every 50 ms (its ticks due at 50, 100, ...). The first tick after
        // the subscription runs 10 ms late (more than an eighth of 50 ms), the others 1 ms.
        // Taking the grid from when the first send ran (60) would put every later tick 9 ms
        // before its slot: each would wait, one wake-up more per notification.
        for tick in 1...10 {
            let due = start + .milliseconds(tick * 50)
            f.clock.advance(by: (due + .milliseconds(tick == 1 ? 10 : 1)) - f.clock.now)
            f.clock.tick(dueAt: due) { f.set("fast", [UInt8(tick)]) }
            #expect(!f.pacer.isPending("fast"), "tick \(tick) waited for its slot (a second wake-up)")
        }
        let sent = f.sent.filter { $0.id == "fast" }
        #expect(sent.map(\.value) == (1...10).map { [UInt8($0)] })
        #expect(f.clock.pendingCount == 0)
        #expect(f.pacer.coalescedCount == 0)
    }

    @Test("a value source ticking twice per interval still gets one notification per interval")
    func sourceFasterThanTheIntervalIsPaced() throws {
        let f = try Fixture()
        let start = f.clock.now
        // Ticks due every 25 ms (half of fast's 50 ms), each run 1 ms late, for one second.
        for tick in 1...40 {
            let due = start + .milliseconds(tick * 25)
            f.clock.advance(by: (due + .milliseconds(1)) - f.clock.now)
            f.clock.tick(dueAt: due) { f.set("fast", [UInt8(tick)]) }
        }
        f.clock.advance(by: .milliseconds(60))
        let times = f.sent.filter { $0.id == "fast" }.map { $0.at - start }
        #expect(times.count <= 21, "\(times.count) notifications in 1.06 s at one per 50 ms")
        for (a, b) in zip(times, times.dropFirst()) {
            #expect(b - a >= .milliseconds(25), "two notifications \(b - a) apart")
        }
        // The latest value wins: the last tick's value is the last sent.
        #expect(f.sent.last?.value == [40])
    }

    @Test("a change earlier than an eighth of an interval before the slot still waits for it")
    func earlyChangeWaits() throws {
        let f = try Fixture()
        let start = f.clock.now
        f.set("fast", [1])  // t=0: sent, slot 50
        f.clock.advance(by: .milliseconds(43))
        f.set("fast", [2])  // t=43: 7 ms early (more than 50/8 = 6.25 ms): pending until 50
        #expect(f.pacer.isPending("fast"))
        f.clock.advance(by: .milliseconds(7))
        f.clock.advance(by: .milliseconds(45))
        f.set("fast", [3])  // t=95: 5 ms before the slot at 100: on time, sent now
        #expect(f.sent.filter { $0.id == "fast" }.map { $0.at - start }
            == [.zero, .milliseconds(50), .milliseconds(95)])
    }

    @Test("after a late send the next slot stays on the grid, but never closer than half an interval")
    func slotsKeepTheLongRunRate() throws {
        let f = try Fixture()
        let start = f.clock.now
        f.set("fast", [1])  // t=0: sent, next slot 50
        f.clock.advance(by: .milliseconds(70))
        f.set("fast", [2])  // t=70 (late): sent, next slot max(100, 95) = 100
        f.clock.advance(by: .milliseconds(20))
        f.set("fast", [3])  // t=90: before the slot (by more than an eighth), pending until 100
        f.clock.advance(by: .milliseconds(15))
        let times = f.sent.filter { $0.id == "fast" }.map { $0.at - start }
        #expect(times == [.zero, .milliseconds(70), .milliseconds(100)])
    }

    @Test("a flood every 1 ms with notifyIntervalMs 50 sends at most one per 50 ms, the latest value")
    func floodIsPaced() throws {
        let f = try Fixture()
        let start = f.clock.now
        for step in 0..<1000 {
            f.set("fast", [UInt8(truncatingIfNeeded: step >> 8), UInt8(truncatingIfNeeded: step)])
            f.clock.advance(by: .milliseconds(1))
        }
        f.clock.advance(by: .milliseconds(100))
        let sent = f.sent.filter { $0.id == "fast" }
        // 1 s of changes: one at once, then one per 50 ms, plus the final pending one.
        #expect(sent.count <= 1000 / 50 + 1)
        #expect(sent.count >= 1000 / 50)
        for (earlier, later) in zip(sent, sent.dropFirst()) {
            #expect(later.at - earlier.at >= .milliseconds(50))
        }
        #expect(sent.last?.value == [3, 231], "the last value (999) is the one that goes out")
        #expect(f.pacer.coalescedCount > 900, "dropped values are not queued")
        #expect(f.clock.pendingCount == 0)
        #expect(sent.first?.at == start)
    }

    @Test("without notifyIntervalMs the default spacing is 10 ms")
    func defaultInterval() throws {
        let f = try Fixture()
        #expect(f.pacer.interval(for: "plain") == .milliseconds(10))
        #expect(f.pacer.interval(for: "fast") == .milliseconds(50))
        f.set("plain", [1])
        f.set("plain", [2])
        f.set("plain", [3])
        #expect(f.sent.map(\.value) == [[1]])
        #expect(f.pacer.isPending("plain"))
        f.clock.advance(by: .milliseconds(9))
        #expect(f.sent.count == 1)
        f.clock.advance(by: .milliseconds(1))
        #expect(f.sent.map(\.value) == [[1], [3]])
        f.clock.advance(by: .seconds(1))
        f.set("plain", [4])
        #expect(f.sent.map(\.value) == [[1], [3], [4]], "after a quiet interval a change goes out at once")
    }

    @Test("a pending value is dropped when the last subscriber leaves")
    func unsubscribeDropsPending() throws {
        let f = try Fixture()
        f.set("fast", [1])
        f.set("fast", [2])
        f.database.setNotifying(f.database["fast"]!, false)
        f.clock.advance(by: .milliseconds(60))
        #expect(f.sent.map(\.value) == [[1]])
    }

    @Test("the effective MTU is the smallest recent one; longer values warn once per characteristic")
    func mtuWarning() throws {
        let f = try Fixture()
        #expect(f.mtu.effective == 23)
        f.mtu.record(mtu: 185, device: "/org/bluez/hci0/dev_A")
        f.mtu.record(mtu: 64, device: "/org/bluez/hci0/dev_B")
        f.mtu.record(mtu: 517, device: "/org/bluez/hci0/dev_A")
        #expect(f.mtu.effective == 64)
        f.set("plain", [UInt8](repeating: 1, count: 61))
        #expect(f.pacer.truncationWarnings == 0, "61 bytes fit MTU 64 - 3")
        f.clock.advance(by: .milliseconds(20))
        f.set("plain", [UInt8](repeating: 2, count: 62))
        f.clock.advance(by: .milliseconds(20))
        f.set("plain", [UInt8](repeating: 3, count: 100))
        #expect(f.pacer.truncationWarnings == 1)
        #expect(f.sent.count == 3, "the value is still sent; bluetoothd cuts it")
        for device in 0..<MTUTracker.rememberedDevices { f.mtu.record(mtu: 247, device: "dev\(device)") }
        #expect(f.mtu.effective == 247, "devices not seen lately are forgotten")
    }
}
