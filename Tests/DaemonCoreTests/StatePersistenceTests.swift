// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Glibc
import Mainloop
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [
      {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
        {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write"],
         "value": {"utf8": "hello"}, "minLength": 1, "maxLength": 8,
         "descriptors": [{"id": "label-desc", "uuid": "2901", "flags": ["read", "write"], "value": {"utf8": "Label"},
                          "maxLength": 8}]},
        {"id": "mode", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["read", "write"], "value": {"uint8": 1}},
        {"id": "scratch", "uuid": "12345678-1234-5678-1234-56789abcdef3", "flags": ["read", "write"], "persist": false},
        {"id": "level", "uuid": "2A19", "flags": ["read", "notify"], "value": {"uint8": 100}, "persist": true,
         "minLength": 1, "maxLength": 1,
         "update": {"everyMs": 1000, "source": {"counter": {"start": 0, "step": 1, "min": 0, "max": 100}}}},
        {"id": "fixed", "uuid": "2A29", "flags": ["read"], "value": {"utf8": "ACME"}}
      ]}]}
    """

/// A runtime built by the factory as the daemon builds it, saving to `storage`, with its
/// time on `scheduler`: the persistence under test is the daemon's.
private struct Fixture {
    let configuration: Configuration
    let scheduler = ManualScheduler()
    let storage = MemoryStorage()
    let log = RecordedLog()
    let factory: RuntimeFactory
    let runtime: Runtime
    let persistence: Persistence
    var database: AttributeDatabase { runtime.database }

    init() throws {
        configuration = try ConfigurationLoader.parse(Array(definition.utf8)).get().configuration
        factory = RuntimeFactory(
            loop: try EventLoop(), state: .storage(storage, saved: nil), scheduling: scheduler.scheduling,
            logger: log.logger)
        runtime = factory.makeService(configuration).runtime
        persistence = try #require(runtime.persistence)
    }

    func attribute(_ id: String) throws -> Attribute { try #require(database[id]) }

    /// A central's write as GattRequestHandler does it: store, then reply after the commit.
    func write(_ id: String, _ text: String, into results: Box) throws {
        let attribute = try attribute(id)
        try database.write(attribute, bytes: Array(text.utf8), offset: 0).get()
        persistence.commit(afterWriteTo: attribute) { results.values.append($0) }
    }
}

private final class Box {
    var values: [Result<Void, StateStoreError>] = []
}

private func text(_ attribute: Attribute) -> String { String(decoding: attribute.value, as: UTF8.self) }

@Suite("Persistence: what is saved, and acknowledged means durable")
struct StatePersistenceTests {
    @Test("writable characteristics and descriptors persist by default; persist overrides")
    func whichPersist() throws {
        let fixture = try Fixture()
        #expect(Persistence.persistentIDs(fixture.configuration) == ["label", "label-desc", "mode", "level"])
    }

    @Test("a burst of writes in one iteration waits for one save, then every reply succeeds")
    func burstSharesOneSave() throws {
        let fixture = try Fixture()
        let replies = Box()
        for value in ["a", "bb", "ccc"] { try fixture.write("label", value, into: replies) }
        try fixture.write("mode", "m", into: replies)
        try fixture.write("label-desc", "Desc", into: replies)
        #expect(replies.values.isEmpty, "no reply may leave before the value is on disk")
        #expect(fixture.storage.saved.isEmpty)
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.count == 1)
        #expect(replies.values.count == 5)
        #expect(replies.values.allSatisfy { (try? $0.get()) != nil })
        let document = try #require(fixture.storage.saved.first)
        #expect(document.characteristics["label"]?.value == Array("ccc".utf8))
        #expect(document.characteristics["mode"]?.value == Array("m".utf8))
        #expect(document.descriptors["label-desc"]?.value == Array("Desc".utf8))
        #expect(document.characteristics["scratch"] == nil && document.characteristics["fixed"] == nil)
    }

    @Test("a write to a non-persistent characteristic is answered at once without a save")
    func nonPersistent() throws {
        let fixture = try Fixture()
        let replies = Box()
        try fixture.write("scratch", "x", into: replies)
        #expect(replies.values.count == 1)
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.isEmpty)
    }

    @Test("rewriting the saved value succeeds without another fsync")
    func unchangedWritesNothing() throws {
        let fixture = try Fixture()
        let replies = Box()
        try fixture.write("label", "new", into: replies)
        fixture.scheduler.endIteration()
        try fixture.write("label", "new", into: replies)
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.count == 1)
        #expect(replies.values.count == 2)
    }

    @Test("a failed save refuses every waiting write and rolls each value back to the saved one")
    func failedSaveRollsBack() throws {
        let fixture = try Fixture()
        let replies = Box()
        try fixture.write("label", "kept", into: replies)
        fixture.scheduler.endIteration()
        fixture.storage.failure = StateStoreError(operation: "write", path: "/state/state.json.tmp-1-0", code: ENOSPC)
        try fixture.write("label", "lost1", into: replies)
        try fixture.write("label", "lost2", into: replies)
        try fixture.write("mode", "z", into: replies)
        fixture.scheduler.endIteration()
        let refused = replies.values.dropFirst()
        #expect(refused.count == 3)
        for result in refused {
            guard case .failure(let error) = result else {
                Issue.record("a write was acknowledged although its save failed")
                continue
            }
            #expect(error.code == ENOSPC)
        }
        #expect(text(try fixture.attribute("label")) == "kept")
        #expect(try fixture.attribute("mode").value == [1])
        #expect(fixture.log.lines.contains { $0.hasPrefix("error cannot save the state") && $0.contains("No space left") })
        // The disk has room again: writes are acknowledged again.
        fixture.storage.failure = nil
        try fixture.write("label", "after", into: replies)
        fixture.scheduler.endIteration()
        #expect((try? replies.values.last?.get()) != nil)
        #expect(fixture.storage.saved.last?.characteristics["label"]?.value == Array("after".utf8))
    }

    @Test("timer values are saved once, after at most a second, not on every tick")
    func timerValuesDelayed() throws {
        let fixture = try Fixture()
        let level = try fixture.attribute("level")
        for tick in 1...10 { fixture.database.set(level, to: [UInt8(tick)], origin: .timer(forceNotify: false)) }
        fixture.persistence.recordCounter(10, id: "level")
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.isEmpty)
        #expect(fixture.scheduler.pendingCount == 1)
        #expect(try #require(fixture.scheduler.nextDelay) <= .seconds(1))
        fixture.scheduler.advance(by: .seconds(1))
        #expect(fixture.storage.saved.count == 1)
        #expect(fixture.storage.saved.first?.characteristics["level"]?.value == [10])
        #expect(fixture.storage.saved.first?.sources["level"] == .init(counter: 10))
    }

    @Test("flushNow saves what a pending timer would have saved (SIGTERM)")
    func flushNowSaves() throws {
        let fixture = try Fixture()
        fixture.database.set(try fixture.attribute("level"), to: [42], origin: .timer(forceNotify: false))
        #expect((try? fixture.persistence.flushNow().get()) != nil)
        #expect(fixture.storage.saved.last?.characteristics["level"]?.value == [42])
    }

    @Test("restore applies values that fit and drops, with a log line each, those that no longer do")
    func restoreDropsWhatNoLongerFits() throws {
        let fixture = try Fixture()
        let labelUUID = try fixture.attribute("label").uuid
        let document = StateDocument(
            characteristics: [
                "label": .init(uuid: labelUUID, value: Array("saved".utf8), minLength: 1, maxLength: 8),
                "mode": .init(uuid: BluetoothUUID(uuid16: 0x2A00), value: [7], minLength: 0, maxLength: 512),
                "level": .init(uuid: BluetoothUUID(uuid16: 0x2A19), value: [], minLength: 0, maxLength: 512),
                "scratch": .init(uuid: try fixture.attribute("scratch").uuid, value: [1], minLength: 0, maxLength: 512),
                "gone": .init(uuid: BluetoothUUID(uuid16: 0x2A01), value: [1], minLength: 0, maxLength: 512),
            ],
            descriptors: ["label-desc": .init(uuid: BluetoothUUID(uuid16: 0x2901), value: Array("far too long".utf8), minLength: 0, maxLength: 512)],
            sources: ["level": .init(counter: 57), "mode": .init(counter: 3)],
            advertisements: ["old-advert": false])
        let dropped = fixture.persistence.restore(from: .loaded(document))
        #expect(text(try fixture.attribute("label")) == "saved")
        #expect(try fixture.attribute("mode").value == [1])
        #expect(try fixture.attribute("level").value == [100])
        #expect(fixture.persistence.savedCounter(id: "level") == 57)
        #expect(fixture.persistence.savedAdvertisementEnabled(id: "old-advert") == nil)
        #expect(
            dropped == [
                DroppedValue(id: "gone", reason: "no longer defined"),
                DroppedValue(id: "level", reason: "length 0 is outside 1...1"),
                DroppedValue(id: "mode", reason: "UUID changed from 2a00 to 12345678-1234-5678-1234-56789abcdef2"),
                DroppedValue(id: "scratch", reason: "no longer persistent"),
                DroppedValue(id: "label-desc", reason: "length 12 is outside 0...8"),
                DroppedValue(id: "mode", reason: "no longer has a value source"),
                DroppedValue(id: "old-advert", reason: "no longer defined"),
            ])
        for drop in dropped {
            #expect(fixture.log.lines.contains { $0.contains("dropped a saved value") && $0.contains("gatt.id=\(drop.id) ") })
        }
        // Restoring is not a write: nothing is saved until something changes.
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.isEmpty)
    }

    @Test("a damaged file is logged with its reason and changes no value")
    func restoreDamaged() throws {
        let fixture = try Fixture()
        fixture.persistence.restore(from: .damaged(reason: "truncated or corrupt: line 3", movedTo: "/s/state.json.damaged-1"))
        #expect(text(try fixture.attribute("label")) == "hello")
        #expect(fixture.log.lines.contains { $0.hasPrefix("error the state file is damaged") && $0.contains("line 3") })
    }

    @Test("advertisement on/off is saved at the end of the iteration and rolled back when the save fails")
    func advertisementState() throws {
        let fixture = try Fixture()
        let replies = Box()
        fixture.persistence.recordAdvertisementEnabled(false, id: "main") { replies.values.append($0) }
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.last?.advertisements["main"] == false)
        fixture.storage.failure = StateStoreError(operation: "open", path: "/s", code: EROFS)
        fixture.persistence.recordAdvertisementEnabled(true, id: "main") { replies.values.append($0) }
        fixture.scheduler.endIteration()
        #expect(replies.values.count == 2)
        #expect(fixture.persistence.savedAdvertisementEnabled(id: "main") == false)
    }

    @Test("handles are restored, recorded once registered, saved, and a bad handles section is logged alone")
    func handles() throws {
        let fixture = try Fixture()
        var document = StateDocument(
            characteristics: ["mode": .init(uuid: BluetoothUUID("12345678-1234-5678-1234-56789abcdef2")!, value: [7], minLength: 0, maxLength: 512)])
        document.handles = AttributeHandles(services: ["svc": 0x40], characteristics: ["label": 0x42])
        fixture.persistence.restore(from: .loaded(document))
        #expect(fixture.persistence.savedHandles == document.handles)
        let placed = AttributeHandles(services: ["svc": 0x40], characteristics: ["label": 0x42, "mode": 0x46])
        fixture.persistence.recordHandles(placed)
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.last?.handles == placed)
        #expect(fixture.storage.saved.last?.characteristics["mode"]?.value == [7])
        let saves = fixture.storage.saved.count
        fixture.persistence.recordHandles(placed)
        fixture.scheduler.endIteration()
        #expect(fixture.storage.saved.count == saves, "the same handles again write nothing")

        let other = try Fixture()
        var damaged = try StateDocument(
            decoding: Array(#"{"version": 3, "advertisements": {}, "handles": {"services": {"svc": 0}}}"#.utf8))
        damaged.characteristics = document.characteristics
        other.persistence.restore(from: .loaded(damaged))
        #expect(other.persistence.savedHandles.isEmpty)
        #expect(try other.attribute("mode").value == [7], "the values are kept")
        #expect(
            other.log.lines.contains {
                $0.hasPrefix("error the state file's attribute handles are unusable")
                    && $0.contains(#"reason=handles.services["svc"]: handle 0 is outside 1...65535"#)
            })
    }

    @Test("a reload's persistence carries over the handles, and the counters and advertisement states that still apply")
    func carriesOver() throws {
        let old = try Fixture()
        let handles = AttributeHandles(services: ["svc": 10], characteristics: ["level": 12])
        old.persistence.recordHandles(handles)
        old.persistence.recordCounter(7, id: "level")
        old.persistence.recordCounter(3, id: "gone")
        old.persistence.recordAdvertisementEnabled(false, id: "main")
        old.persistence.recordAdvertisementEnabled(true, id: "removed")
        old.persistence.recordAdvertisementData(#"{"localName":"kept"}"#, id: "main")
        old.persistence.recordAdvertisementData(#"{"localName":"dropped"}"#, id: "removed")
        old.scheduler.endIteration()

        let reloaded = """
            {"version": 1, "services": [
              {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
                {"id": "level", "uuid": "2A19", "flags": ["read", "notify"], "value": {"uint8": 100},
                 "minLength": 1, "maxLength": 1,
                 "update": {"everyMs": 1000, "source": {"counter": {"start": 0, "step": 1, "min": 0, "max": 100}}}},
                {"id": "gone", "uuid": "2A29", "flags": ["read"], "value": {"uint8": 1}}
              ]}],
             "advertisements": [{"id": "main", "type": "peripheral", "localName": "rt"}]}
            """
        let configuration = try ConfigurationLoader.parse(Array(reloaded.utf8)).get().configuration
        let savesBefore = old.storage.saved.count
        let new = try #require(old.factory.make(configuration, after: old.runtime).persistence)
        #expect(new.savedHandles == handles, "kept until the new tree's handles are recorded")
        #expect(new.savedCounter(id: "level") == 7)
        #expect(new.savedCounter(id: "gone") == nil, "its characteristic no longer has an update")
        #expect(new.savedAdvertisementEnabled(id: "main") == false)
        #expect(new.savedAdvertisementData(id: "main") == #"{"localName":"kept"}"#)
        #expect(new.savedAdvertisementEnabled(id: "removed") == nil, "no longer defined")
        #expect(new.savedAdvertisementData(id: "removed") == nil, "no longer defined")
        old.scheduler.endIteration()
        #expect(old.storage.saved.count == savesBefore + 1, "what was carried over is saved")
        let document = try #require(old.storage.saved.last)
        #expect(document.handles == handles)
        #expect(document.sources == ["level": .init(counter: 7)])
        #expect(document.advertisements == ["main": false])
        #expect(document.advertisementData == ["main": #"{"localName":"kept"}"#])
    }
}
