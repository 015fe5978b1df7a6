// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Mainloop
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [
      {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
        {"id": "a", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write"], "maxLength": 4},
        {"id": "b", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["read", "write"], "maxLength": 4},
        {"id": "tick", "uuid": "2A19", "flags": ["read", "notify"], "persist": true, "value": {"uint8": 0},
         "minLength": 1, "maxLength": 1}
      ]}]}
    """

/// Persistence driven by the real event loop, scheduled as the daemon schedules it.
@Suite("Persistence on the event loop")
struct StateLoopTests {
    /// The runtime as the daemon builds it (`RuntimeFactory`, everything on `loop`: saves
    /// after the loop turn, delayed ones by `Persistence.timerSaveDelay`), saving to a
    /// `MemoryStorage`.
    private static func make(_ loop: EventLoop) throws -> (service: RequestService, storage: MemoryStorage) {
        let configuration = try ConfigurationLoader.parse(Array(definition.utf8)).get().configuration
        let storage = MemoryStorage()
        let service = RuntimeFactory(loop: loop, state: .storage(storage, saved: nil), logger: quietLogger)
            .makeService(configuration).service
        return (service, storage)
    }

    @Test("writes handled in one loop turn are saved once, and their replies leave in that turn")
    func oneSavePerTurn() throws {
        let loop = try EventLoop()
        let (service, storage) = try Self.make(loop)
        let database = service.runtime.database
        var replies = 0
        var savesSeenByReplies: [Int] = []
        let turn = loop.timer(after: .zero) {
            for (id, byte) in [("a", 1), ("b", 2), ("a", 3)] {
                service.write(database[id]!, bytes: [UInt8(byte)], AttributeRequest()) { result in
                    if case .success = result { replies += 1 }
                    savesSeenByReplies.append(storage.saved.count)
                }
            }
        }
        #expect(loop.run(until: { replies == 3 }, timeout: .seconds(5)))
        #expect(storage.saved.count == 1)
        #expect(savesSeenByReplies == [1, 1, 1], "every reply comes after the save")
        #expect(storage.saved.first?.characteristics["a"]?.value == [3])
        turn.cancel()
    }

    @Test("ticks of a timer value are saved once, after the delay")
    func delayedSave() throws {
        let loop = try EventLoop()
        let (service, storage) = try Self.make(loop)
        let database = service.runtime.database
        let delay = try #require(service.runtime.persistence).timerSaveDelay
        let tick = database["tick"]!
        var count = 0
        let clock = ContinuousClock()
        let start = clock.now
        let ticker = loop.timer(after: .milliseconds(10), repeating: .milliseconds(10)) {
            count += 1
            database.set(tick, to: [UInt8(truncatingIfNeeded: count)], origin: .timer(forceNotify: false))
        }
        #expect(loop.run(until: { !storage.saved.isEmpty }, timeout: delay + .seconds(5)))
        #expect(clock.now - start >= delay)
        #expect(storage.saved.count == 1)
        #expect(count > 1, "several ticks shared the save")
        ticker.cancel()
    }
}
