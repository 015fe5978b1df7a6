// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [{"id": "s", "uuid": "180D", "characteristics": [
      {"id": "hr", "uuid": "2A37", "flags": ["notify"], "value": [{"uint8": 0}, {"uint8": 0}],
       "minLength": 2, "maxLength": 2,
       "update": {"everyMs": 1000, "source": {"counter": {"start": 60, "step": 1, "min": 60, "max": 62}},
                  "encode": [{"uint8": 0}, {"uint8": "$"}]}},
      {"id": "same", "uuid": "2A38", "flags": ["read", "notify"], "value": {"uint8": 5},
       "update": {"everyMs": 500, "source": {"counter": {"start": 5, "step": 1, "min": 5, "max": 5}},
                  "notifyUnchanged": true}},
      {"id": "fresh", "uuid": "2A39", "flags": ["read", "notify"], "maxLength": 1,
       "update": {"everyMs": 100, "whileUnsubscribed": true,
                  "source": {"counter": {"start": 250, "step": 10, "min": 0, "max": 1000}}}}
    ]}]}
    """

@Suite("Update scheduler")
struct SchedulerTests {
    private final class Fixture {
        let database: AttributeDatabase
        let timers = ManualScheduler()
        let scheduler: UpdateScheduler
        /// The runtime the factory built.
        let runtime: Runtime
        var notified: [String: [[UInt8]]] = [:]

        /// The value sources built by the factory (nothing saved), their timers on
        /// `timers`: the daemon's sources, unless the test gives its own (`sources`).
        init(_ json: String = definition, sources: @escaping RuntimeFactory.Sources = UpdateScheduler.daemonSources)
            throws
        {
            runtime = try unsavedService(try liveConfiguration(json), scheduler: timers, sources: sources).runtime
            database = runtime.database
            scheduler = runtime.updates
            database.observeChanges { [unowned self] attribute, _ in
                if attribute.isNotifying { self.notified[attribute.id, default: []].append(attribute.value) }
            }
        }
    }

    @Test("nothing runs until someone subscribes, except whileUnsubscribed updates")
    func idleWithoutSubscribers() throws {
        let f = try Fixture()
        f.scheduler.start()
        #expect(f.timers.pendingCount == 1, "only the whileUnsubscribed characteristic has a timer")
        #expect(f.scheduler.updaters["fresh"]?.isRunning == true)
        #expect(f.scheduler.updaters["hr"]?.isRunning == false)
        f.timers.advance(by: .seconds(2))
        #expect(f.database["hr"]?.value == [0, 0], "an unsubscribed characteristic is not updated")
    }

    @Test("the timer runs from StartNotify to StopNotify, at everyMs, and notifies each new value")
    func runsWhileSubscribed() throws {
        let f = try Fixture()
        f.scheduler.start()
        let hr = f.database["hr"]!
        f.database.setNotifying(hr, true)
        #expect(f.timers.pendingCount == 2)
        #expect(f.timers.repeatingPeriods.contains(.milliseconds(1000)))
        f.timers.advance(by: .zero)
        for _ in 0..<3 { f.timers.advance(by: .seconds(1)) }
        #expect(f.notified["hr"] == [[0, 60], [0, 61], [0, 62], [0, 60]])
        f.database.setNotifying(hr, false)
        #expect(f.timers.pendingCount == 1, "StopNotify stops the timer")
        f.timers.advance(by: .seconds(1))
        #expect(f.notified["hr"]?.count == 4)
        #expect(f.scheduler.updaters["hr"]?.ticks == 4)
    }

    @Test("an unchanged value notifies only with notifyUnchanged")
    func unchangedValues() throws {
        let f = try Fixture()
        f.scheduler.start()
        f.database.setNotifying(f.database["same"]!, true)
        f.timers.advance(by: .zero)
        for _ in 0..<2 { f.timers.advance(by: .milliseconds(500)) }
        #expect(f.notified["same"] == [[5], [5], [5]], "notifyUnchanged notifies every tick")

        let plain = definition.replacingOccurrences(of: "\"notifyUnchanged\": true", with: "\"notifyUnchanged\": false")
        let g = try Fixture(plain)
        g.scheduler.start()
        g.database.setNotifying(g.database["same"]!, true)
        g.timers.advance(by: .zero)
        for _ in 0..<2 { g.timers.advance(by: .milliseconds(500)) }
        #expect(g.notified["same"] == nil, "the value never changes, so nothing is notified")
    }

    @Test("a value that breaks the length bounds is skipped and logged once; a good one recovers")
    func lengthViolation() throws {
        // 250, 260 (does not fit uint8: encode error), 270 ... all fail until the counter wraps.
        let f = try Fixture()
        f.scheduler.start()
        let fresh = f.scheduler.updaters["fresh"]!
        f.timers.advance(by: .zero)
        #expect(f.database["fresh"]?.value == [250])
        for _ in 0..<5 { f.timers.advance(by: .milliseconds(100)) }
        #expect(f.database["fresh"]?.value == [250], "failed renders keep the last value")
        #expect(fresh.failureKind == "encode")
        #expect(fresh.updates == 1)
        #expect(fresh.loggedFailures == 1)
    }

    @Test("a command still running when the next tick comes makes the tick skip")
    func busySourceSkips() throws {
        let source = HeldSource()
        let f = try Fixture(sources: { loop, persistence in
            let daemons = UpdateScheduler.daemonSources(loop, persistence)
            return { id, update in id == "hr" ? source : daemons(id, update) }
        })
        f.scheduler.start()
        f.database.setNotifying(f.database["hr"]!, true)
        f.timers.advance(by: .zero)
        f.timers.advance(by: .seconds(1))
        f.timers.advance(by: .seconds(1))
        let hr = f.scheduler.updaters["hr"]!
        #expect(source.started == 1, "never two readings at once")
        #expect(hr.skippedTicks == 2)
        source.finish(with: 61)
        #expect(f.database["hr"]?.value == [0, 61])
        f.timers.advance(by: .seconds(1))
        #expect(source.started == 2, "the next tick after the reading landed starts a new one")
    }

    @Test("a failing file source keeps its value, logs the kind once, and recovers")
    func fileFailureOnce() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let path = dir.path + "/level"
        let json = """
            {"version": 1, "services": [{"uuid": "180F", "characteristics": [
              {"id": "level", "uuid": "2A19", "flags": ["read", "notify"], "value": {"uint8": 1},
               "update": {"everyMs": 100, "whileUnsubscribed": true, "source": {"file": {"path": "\(path)"}}}}]}]}
            """
        let f = try Fixture(json)
        f.scheduler.start()
        let level = f.scheduler.updaters["level"]!
        f.timers.advance(by: .zero)
        for _ in 0..<4 { f.timers.advance(by: .milliseconds(100)) }
        #expect(f.database["level"]?.value == [1])
        #expect(level.failureKind == "open: No such file or directory")
        #expect(level.loggedFailures == 1, "five failures of one kind are logged once")
        try dir.file("level", "87\n")
        f.timers.advance(by: .milliseconds(100))
        #expect(f.database["level"]?.value == [87])
        #expect(level.failureKind == nil)
    }
}

/// A source whose readings complete only when the test says so (like a slow command).
private final class HeldSource: ValueSource {
    private var waiting: [(Result<SourceReading, SourceFailure>) -> Void] = []
    private(set) var started = 0

    var isBusy: Bool { !waiting.isEmpty }

    func next(_ done: @escaping (Result<SourceReading, SourceFailure>) -> Void) {
        started += 1
        waiting.append(done)
    }

    func finish(with value: Double) {
        let all = waiting
        waiting = []
        for done in all { done(.success(.number(value))) }
    }
}
