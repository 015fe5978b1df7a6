// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Mainloop
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [
      {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
        {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write", "notify"],
         "value": {"utf8": "hello"}, "minLength": 2, "maxLength": 8},
        {"id": "status", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["read", "notify"],
         "value": {"uint8": 1}, "minLength": 1, "maxLength": 1}
      ]}]}
    """

/// The write and read pipelines of `RequestService`, with the persistence's "end of
/// iteration" run by hand so the order of save and reply is visible.
private enum FixtureError: Error { case noPersistence }

@Suite("Request service: one pipeline for centrals and programs")
struct RequestServiceTests {
    private final class Fixture: NotificationSink {
        let database: AttributeDatabase
        let persistence: Persistence
        let service: RequestService
        let runtime: Runtime
        let scheduler = ManualScheduler()
        let storage = MemoryStorage()
        var saved: [StateDocument] { storage.saved }
        var events: [String] = []

        init() throws {
            let configuration = try liveConfiguration(definition)
            // As the daemon builds it, with the state in `storage` and the time on `scheduler`.
            let factory = RuntimeFactory(
                loop: try EventLoop(), state: .storage(storage, saved: nil), scheduling: scheduler.scheduling,
                logger: quietLogger)
            (service, runtime) = factory.makeService(configuration)
            database = runtime.database
            guard let persistence = runtime.persistence else { throw FixtureError.noPersistence }
            self.persistence = persistence
            service.runtime.notifier.sink = self
            storage.onSave = { [unowned self] _ in self.events.append("saved") }
        }

        func send(_ attribute: Attribute, value: [UInt8]) -> Bool {
            events.append("notified \(attribute.id) \(value)")
            return true
        }

        func endIteration() { scheduler.endIteration() }

        func write(_ id: String, _ bytes: [UInt8], _ request: AttributeRequest = AttributeRequest())
            -> Result<Void, WriteFailure>?
        {
            var outcome: Result<Void, WriteFailure>?
            service.write(database[id]!, bytes: bytes, request) { [unowned self] result in
                outcome = result
                events.append("replied")
            }
            return outcome
        }
    }

    @Test("a central's write is stored, notified, saved, and only then answered")
    func centralWriteOrder() throws {
        let f = try Fixture()
        #expect(f.service.setNotifying(f.database["label"]!, true))
        #expect(f.write("label", Array("hi!".utf8)) == nil, "the reply waits for the save")
        #expect(f.events == ["notified label \(Array("hi!".utf8))"])
        f.endIteration()
        #expect(f.events == ["notified label \(Array("hi!".utf8))", "saved", "replied"])
        #expect(f.saved.last?.characteristics["label"]?.value == Array("hi!".utf8))
    }

    @Test("a refused write stores nothing and is answered with its ATT error")
    func refusedWrites() throws {
        let f = try Fixture()
        #expect(f.write("label", [1]).map(Verdict.init) == .failed(.refused(.invalidAttributeValueLength)))
        #expect(f.write("label", [1, 2], AttributeRequest(offset: 9)).map(Verdict.init) == .failed(.refused(.invalidOffset)))
        #expect(f.write("status", [2]).map(Verdict.init) == .failed(.refused(.writeNotPermitted)))
        #expect(f.database["label"]!.value == Array("hello".utf8))
        #expect(f.database["status"]!.value == [1])
        f.endIteration()
        #expect(f.saved.isEmpty)
    }

    @Test("prepare-authorize only asks: validated, nothing stored")
    func prepareAuthorize() throws {
        let f = try Fixture()
        #expect(f.write("label", [1, 2, 3], AttributeRequest(offset: 2, prepareAuthorize: true)).map(Verdict.init) == .accepted)
        // What bluetoothd sends (no data) is not held to minLength: the final length is
        // checked when the pieces arrive at Execute Write.
        #expect(f.write("label", [], AttributeRequest(prepareAuthorize: true)).map(Verdict.init) == .accepted)
        #expect(f.write("label", [1], AttributeRequest(prepareAuthorize: true)).map(Verdict.init) == .accepted)
        #expect(f.write("label", [], AttributeRequest(offset: 6, prepareAuthorize: true)).map(Verdict.init) == .failed(.refused(.invalidOffset)))
        #expect(f.write("label", Array(repeating: 1, count: 9), AttributeRequest(prepareAuthorize: true)).map(Verdict.init) == .failed(.refused(.invalidAttributeValueLength)))
        #expect(f.write("status", [], AttributeRequest(prepareAuthorize: true)).map(Verdict.init) == .failed(.refused(.writeNotPermitted)))
        #expect(f.database["label"]!.value == Array("hello".utf8))
        #expect(f.scheduler.pendingAfterIteration == 0, "nothing to save")
    }

    @Test("an offset write keeps the bytes before the offset")
    func offsetWrite() throws {
        let f = try Fixture()
        _ = f.write("label", Array("LP".utf8), AttributeRequest(offset: 3))
        f.endIteration()
        #expect(f.database["label"]!.value == Array("helLP".utf8))
    }

    @Test("a program's SetValue needs no write flag, only the length bounds; a persistent value is saved before its reply")
    func controlSet() throws {
        let f = try Fixture()
        var outcome: Result<Void, WriteFailure>?
        f.service.set(f.database["status"]!, to: [7]) { outcome = $0 }
        #expect(outcome.map(Verdict.init) == .accepted, "status does not persist: answered at once")
        f.service.set(f.database["status"]!, to: [7, 8]) { outcome = $0 }
        #expect(outcome.map(Verdict.init) == .failed(.refused(.invalidAttributeValueLength)))
        #expect(f.database["status"]!.value == [7])
        outcome = nil
        f.service.set(f.database["label"]!, to: [1]) { outcome = $0 }
        #expect(outcome.map(Verdict.init) == .failed(.refused(.invalidAttributeValueLength)))
        outcome = nil
        f.service.set(f.database["label"]!, to: Array("set".utf8)) { outcome = $0 }
        #expect(outcome == nil, "label persists: the reply waits for the save")
        f.endIteration()
        #expect(outcome.map(Verdict.init) == .accepted)
        #expect(f.saved.last?.characteristics["label"]?.value == Array("set".utf8))
    }

    @Test("a failed save refuses the write and puts the last saved value back")
    func failedSave() throws {
        let f = try Fixture()
        f.storage.failure = StateStoreError(operation: "write", path: "/x", code: 28)
        var outcome: Result<Void, WriteFailure>?
        f.service.write(f.database["label"]!, bytes: Array("lost".utf8), AttributeRequest()) { outcome = $0 }
        f.endIteration()
        #expect(outcome.map(Verdict.init) == .failed(.notSaved(reason: "cannot write /x: No space left on device (errno 28)")))
        #expect(f.database["label"]!.value == Array("hello".utf8))
    }

    @Test("reads go through the service and teach it the MTU")
    func readLearnsMTU() throws {
        let f = try Fixture()
        let read = f.service.read(f.database["label"]!, AttributeRequest(device: "/dev_1", offset: 1, mtu: 100))
        #expect(read.immediate == .success(Array("ello".utf8)))
        #expect(f.service.mtu.effective == 100)
        #expect(f.service.read(f.database["label"]!, AttributeRequest(offset: 6)).immediate == .failure(.invalidOffset))
    }
}

/// A write's outcome in a comparable form.
private enum Verdict: Equatable {
    case accepted
    case failed(WriteFailure)

    init(_ result: Result<Void, WriteFailure>) {
        switch result {
        case .success: self = .accepted
        case .failure(let failure): self = .failed(failure)
        }
    }
}

extension RequestService.ReadOutcome {
    /// The answer of a read answered at once; nil when it is pending.
    var immediate: Result<[UInt8], GATTError>? {
        guard case .now(let result) = self else { return nil }
        return result.map(Array.init)
    }
}
