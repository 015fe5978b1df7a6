// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Mainloop
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [{"id": "s", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
      {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write"],
       "value": {"utf8": "hello"}, "minLength": 1, "maxLength": 8, "persist": true},
      {"id": "count", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["read", "notify"],
       "value": {"uint8": 0},
       "update": {"everyMs": 1000, "source": {"counter": {"start": 10, "step": 1, "min": 0, "max": 200}}}}
    ]}],
     "advertisements": [{"id": "main", "type": "peripheral", "localName": "rt"}]}
    """

@Suite("Runtime factory: one runtime per served configuration")
struct RuntimeFactoryTests {
    private final class Fixture {
        let loop: EventLoop
        let timers = ManualScheduler()
        let storage = MemoryStorage()
        let factory: RuntimeFactory
        let service: RequestService
        let runtime: Runtime

        init(saved: StateLoadResult? = nil) throws {
            loop = try EventLoop()
            factory = RuntimeFactory(
                loop: loop, state: .storage(storage, saved: saved),
                scheduling: RuntimeScheduling(clock: .loop(loop), timers: timers.updateTimers, persistence: .loop(loop)),
                logger: quietLogger)
            (service, runtime) = factory.makeService(try liveConfiguration(definition))
        }
    }

    @Test("at start the saved state is in the database before anything else sees it, and the service serves it")
    func restoresAtStart() throws {
        let saved = StateDocument(
            characteristics: [
                "label": .init(
                    uuid: try #require(BluetoothUUID("12345678-1234-5678-1234-56789abcdef1")), value: Array("kept".utf8),
                    minLength: 1, maxLength: 8)
            ], sources: ["count": .init(counter: 41)])
        let f = try Fixture(saved: .loaded(saved))
        #expect(f.service.runtime === f.runtime)
        #expect(f.runtime.database["label"]?.value == Array("kept".utf8))
        #expect(f.runtime.persistence?.savedCounter(id: "count") == 41)
    }

    @Test("value sources set their values in the database their runtime serves")
    func sourcesSetTheRuntimesValues() throws {
        let f = try Fixture()
        f.runtime.start()
        let count = try #require(f.runtime.database["count"])
        f.runtime.database.setNotifying(count, true)
        f.timers.advance(by: .zero)
        #expect(count.value == [10])
        #expect(f.runtime.updates.updaters["count"]?.updates == 1)
    }

    @Test(
        "a reload's runtime carries over written values, counters, advertisement states and onWrite programs; old sources stop"
    )
    func carriesOver() throws {
        let f = try Fixture()
        f.runtime.start()
        let label = try #require(f.runtime.database["label"])
        var outcome: Result<Void, WriteFailure>?
        f.service.set(label, to: Array("written".utf8)) { outcome = $0 }
        f.loop.run(until: { outcome != nil }, timeout: .seconds(5))
        #expect(outcome.map { if case .success = $0 { true } else { false } } == true)
        let oldCount = try #require(f.runtime.database["count"])
        f.runtime.database.setNotifying(oldCount, true)
        f.timers.advance(by: .zero)
        f.timers.advance(by: .seconds(1))
        f.runtime.persistence?.recordAdvertisementEnabled(false, id: "main")

        let edited = definition.replacingOccurrences(of: "\"maxLength\": 8", with: "\"maxLength\": 9")
        let next = f.factory.make(try liveConfiguration(edited), after: f.runtime)
        f.service.serve(next)
        f.runtime.stop()
        next.start()
        #expect(f.service.runtime === next)
        #expect(next.database["label"]?.value == Array("written".utf8))
        #expect(next.persistence?.savedCounter(id: "count") == 11)
        #expect(next.persistence?.savedAdvertisementEnabled(id: "main") == false)
        #expect(next.writeHooks.programs === f.runtime.writeHooks.programs, "programs still running are followed")
        #expect(f.timers.pendingCount == 0, "the old runtime's timer stopped; nobody subscribed to the new one yet")

        let newCount = try #require(next.database["count"])
        next.database.setNotifying(newCount, true)
        f.timers.advance(by: .zero)
        #expect(newCount.value == [12], "the counter resumes where the old runtime left it")
        #expect(oldCount.value == [11], "the old database is no longer written")
    }

    @Test("a served runtime replaces the old one whole: reads, writes, saves and readiness follow it")
    func servesTheNewRuntimeWhole() throws {
        let f = try Fixture()
        var ready: [String] = []
        f.service.onReadyToUpdate = { ready.append($0.id) }
        let edited = definition.replacingOccurrences(of: "\"maxLength\": 8", with: "\"maxLength\": 9")
        let next = f.factory.make(try liveConfiguration(edited), after: f.runtime)
        f.service.serve(next)
        #expect(f.runtime.notifier.onReady == nil, "the old notifier no longer forwards to the service")
        let label = try #require(next.database["label"])
        var outcome: Result<Void, WriteFailure>?
        f.service.set(label, to: Array("ninechars".utf8)) { outcome = $0 }
        f.loop.run(until: { outcome != nil }, timeout: .seconds(5))
        #expect(outcome.map { if case .success = $0 { true } else { false } } == true)
        let saved = f.storage.saved.last?.characteristics["label"]?.value
        #expect(saved == Array("ninechars".utf8), "saved by the new persistence")
        #expect(f.runtime.database["label"]?.value == Array("hello".utf8), "the old database is not written")
        if case .now(.success(let bytes)) = f.service.read(label, AttributeRequest()) {
            #expect(Array(bytes) == Array("ninechars".utf8))
        } else {
            Issue.record("the read of the new database's value did not succeed")
        }
        next.notifier.onReady?(label)
        #expect(ready == ["label"], "the new notifier forwards to the service")
    }
}
