// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import TestSupport
import Testing

private let definition = """
    {"version": 1, "services": [
      {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
        {"id": "temp", "uuid": "2A6E", "flags": ["read", "write"], "value": {"int16": 0},
         "minLength": 0, "maxLength": 100, "persist": false},
        {"id": "strict", "uuid": "2A6F", "flags": ["read", "write"], "value": {"uint8": 7},
         "minLength": 1, "maxLength": 1, "persist": false,
         "handler": {"timeoutMs": 500, "fallback": "error", "error": "0x81"}},
        {"id": "plain", "uuid": "2A70", "flags": ["read"], "value": {"uint8": 1}},
        {"id": "setpoint", "uuid": "2A71", "flags": ["read", "write"], "value": {"int16": 2100},
         "minLength": 2, "maxLength": 2, "persist": false, "accept": {"min": 1000, "max": 3000, "error": "0x82"},
         "handler": {"fallback": "error", "error": "0x81"}}
      ]}]}
    """

/// A program's handler as DaemonCore sees it: the test answers each request by hand.
private final class FakeHandler: AttributeHandler {
    let name: String
    var reads: [(id: String, request: AttributeRequest, answer: (HandlerAnswer<[UInt8]>) -> Void)] = []
    var writes: [(id: String, bytes: [UInt8], answer: (HandlerAnswer<Void>) -> Void)] = []

    init(_ name: String) { self.name = name }

    func read(
        _ attribute: Attribute, _ request: AttributeRequest, timeout: Duration,
        answer: @escaping (HandlerAnswer<[UInt8]>) -> Void
    ) {
        reads.append((attribute.id, request, answer))
    }

    func write(
        _ attribute: Attribute, bytes: [UInt8], _ request: AttributeRequest, timeout: Duration,
        answer: @escaping (HandlerAnswer<Void>) -> Void
    ) {
        writes.append((attribute.id, bytes, answer))
    }
}

@Suite("Handlers: programs that answer reads and decide writes")
struct HandlerTests {
    private final class Fixture {
        let database: AttributeDatabase
        let service: RequestService
        let runtime: Runtime
        let handler = FakeHandler(":1.9 /sensor")
        let scheduler = ManualScheduler()

        init() throws {
            let configuration = try liveConfiguration(definition)
            (service, runtime) = try unsavedService(configuration, scheduler: scheduler)
            database = runtime.database
        }

        /// Starts a read; returns a box the answer lands in.
        func read(
            _ id: String, offset: Int = 0, device: String = "/dev_A", mtu: Int? = nil
        ) -> Box<Result<[UInt8], GATTError>> {
            let box = Box<Result<[UInt8], GATTError>>()
            switch service.read(database[id]!, AttributeRequest(device: device, offset: offset, mtu: mtu)) {
            case .now(let result): box.value = result.map(Array.init)
            case .later(let pending): pending.whenDone { box.value = $0.map(Array.init) }
            }
            return box
        }

        func write(_ id: String, _ bytes: [UInt8], offset: Int = 0) -> Box<String> {
            let box = Box<String>()
            service.write(database[id]!, bytes: bytes, AttributeRequest(device: "/dev_A", offset: offset)) { result in
                switch result {
                case .success: box.value = "accepted"
                case .failure(let failure): box.value = "refused 0x" + String(failure.gattError.attCode, radix: 16)
                }
            }
            return box
        }
    }

    final class Box<T> {
        var value: T?
    }

    @Test("the definition's accept rule refuses before the handler is asked; programs are trusted")
    func acceptComesBeforeTheHandler() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["setpoint"], for: f.handler) == nil)
        #expect(f.write("setpoint", [0xE7, 0x03]).value == "refused 0x82", "999 is below 1000")
        #expect(f.write("setpoint", [0xB9, 0x0B]).value == "refused 0x82", "3001 is above 3000")
        #expect(f.write("setpoint", [0x0C], offset: 1).value == "refused 0x82", "0x0C34 = 3124, the value it would leave")
        #expect(f.write("setpoint", [1]).value == "refused 0xd", "the length bounds first")
        #expect(f.handler.writes.isEmpty, "no refused value reached the handler")
        #expect(f.database["setpoint"]!.value == [0x34, 0x08])
        let inRange = f.write("setpoint", [0xDC, 0x05])
        #expect(f.handler.writes.map(\.bytes) == [[0xDC, 0x05]], "1500 goes on to the handler")
        f.handler.writes[0].answer(.answered(()))
        #expect(inRange.value == "accepted")
        #expect(f.database["setpoint"]!.value == [0xDC, 0x05])
        let set = Box<String>()
        f.service.set(f.database["setpoint"]!, to: [0x10, 0x27]) { set.value = (try? $0.get()) != nil ? "set" : "refused" }
        #expect(set.value == "set", "SetValue (gattctl set) is a program on the board: trusted, not checked")
        // Without a handler the rule still comes first: the fallback's error only for values it accepts.
        #expect(f.service.handlers.release(f.handler) == ["setpoint"])
        #expect(f.write("setpoint", [0xE7, 0x03]).value == "refused 0x82")
        #expect(f.write("setpoint", [0xDC, 0x05]).value == "refused 0x81")
    }

    @Test("a handler may take only the writes (reads from the store) or only the reads")
    func handlerOperations() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["setpoint", "strict"], operations: .write, for: f.handler) == nil)
        #expect(f.read("setpoint").value == .success([0x34, 0x08]), "the store, not the fallback's error")
        #expect(f.handler.reads.isEmpty)
        let write = f.write("strict", [3])
        #expect(f.handler.writes.count == 1)
        f.handler.writes[0].answer(.refused(.application(0x83)))
        #expect(write.value == "refused 0x83")
        // Another program may serve the reads of the same attribute; not its writes.
        let reader = FakeHandler(":1.10 /reader")
        #expect(f.service.handlers.claim(["strict"], operations: .read, for: reader) == nil)
        #expect(
            f.service.handlers.claim(["strict"], operations: .write, for: reader)
                == .alreadyClaimed(id: "strict", by: ":1.9 /sensor"))
        let read = f.read("strict")
        #expect(reader.reads.count == 1 && f.handler.reads.isEmpty)
        reader.reads[0].answer(.answered([4]))
        #expect(read.value == .success([4]))
        // The writer leaves: the reader's claim stays, and writes are gattd's own again
        // (the program that holds the reads left them to gattd).
        #expect(f.service.handlers.release(f.handler) == ["setpoint", "strict"])
        #expect(f.write("strict", [5]).value == "accepted")
        #expect(f.database["strict"]!.value == [5])
        #expect(f.read("setpoint").value == .failure(.application(0x81)), "no handler at all: fail closed again")
        #expect(f.service.handlers.release(reader) == ["strict"])
        #expect(f.write("strict", [6]).value == "refused 0x81")
    }

    @Test("a claimed attribute's read is answered by the handler, a fresh value each time")
    func readsGoToTheHandler() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        let first = f.read("temp")
        #expect(first.value == nil, "the loop does not wait for the handler")
        f.handler.reads[0].answer(.answered([0x10, 0x09]))
        #expect(first.value == .success([0x10, 0x09]))
        let second = f.read("temp")
        f.handler.reads[1].answer(.answered([0x11, 0x09]))
        #expect(second.value == .success([0x11, 0x09]))
        #expect(f.database["temp"]!.value == [0, 0], "answers are served, not stored")
        #expect(f.read("plain").value == .success([1]), "unclaimed attributes are served from the database")
    }

    @Test("a long read asks the handler once; the device's offset reads get the same bytes")
    func longReadIsConsistent() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        let value = Array(0..<60).map(UInt8.init)
        let first = f.read("temp")
        f.handler.reads[0].answer(.answered(value))
        #expect(first.value == .success(value))
        #expect(f.read("temp", offset: 22).value == .success(Array(value[22...])))
        #expect(f.read("temp", offset: 44).value == .success(Array(value[44...])))
        #expect(f.read("temp", offset: 61).value == .failure(.invalidOffset))
        #expect(f.handler.reads.count == 1, "follow-up reads did not ask again")
        let other = f.read("temp", offset: 22, device: "/dev_B")
        #expect(f.handler.reads.count == 2, "another device's offset read is not served from dev_A's bytes")
        f.handler.reads[1].answer(.answered(Array(repeating: 9, count: 30)))
        #expect(other.value == .success(Array(repeating: 9, count: 8)))
    }

    @Test("EATT: a long read that starts while the handler is asked for the same central's read gets that answer")
    func longReadsOnTwoBearersShareTheAnswer() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        let value = Array(0..<60).map(UInt8.init)
        let first = f.read("temp", mtu: 23)
        let second = f.read("temp", mtu: 23)
        #expect(f.handler.reads.count == 1, "the second bearer's read waits for the same answer")
        f.handler.reads[0].answer(.answered(value))
        #expect(first.value == .success(value))
        #expect(second.value == .success(value))
        for offset in [22, 44] {
            #expect(f.read("temp", offset: offset, mtu: 23).value == .success(Array(value[offset...])))
            #expect(f.read("temp", offset: offset, mtu: 23).value == .success(Array(value[offset...])))
        }
        #expect(f.handler.reads.count == 1)
        _ = f.read("temp", mtu: 23)
        #expect(f.handler.reads.count == 2, "both long reads ended: a new read asks the handler")
    }

    @Test("EATT: a long read that starts while another is read in pieces gets the same bytes, never a stitched value")
    func longReadDuringAnotherIsConsistent() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        let value = Array(0..<60).map(UInt8.init)
        let first = f.read("temp", mtu: 23)
        f.handler.reads[0].answer(.answered(value))
        #expect(first.value == .success(value))
        #expect(f.read("temp", offset: 22, mtu: 23).value == .success(Array(value[22...])))
        // The second bearer starts its read: the first one's bytes, not a new answer that
        // the first one's next piece would be cut from.
        #expect(f.read("temp", mtu: 23).value == .success(value))
        #expect(f.handler.reads.count == 1)
        #expect(f.read("temp", offset: 44, mtu: 23).value == .success(Array(value[44...])), "the first one ends")
        #expect(f.read("temp", offset: 22, mtu: 23).value == .success(Array(value[22...])))
        #expect(f.read("temp", offset: 44, mtu: 23).value == .success(Array(value[44...])), "the second one ends")
        _ = f.read("temp", mtu: 23)
        #expect(f.handler.reads.count == 2)
        f.handler.reads[1].answer(.answered([1, 2, 3]))
        _ = f.read("temp", mtu: 23)
        #expect(f.handler.reads.count == 3, "a value that fits one response is no long read: each read asks")
    }

    @Test("without an MTU from bluetoothd every offset-0 read asks the handler")
    func noMTUNoPin() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        _ = f.read("temp")
        f.handler.reads[0].answer(.answered(Array(repeating: 5, count: 60)))
        _ = f.read("temp")
        #expect(f.handler.reads.count == 2)
    }

    @Test("a long read the central abandoned keeps its bytes for new reads only for a while")
    func abandonedLongReadExpires() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        let value = Array(0..<60).map(UInt8.init)
        _ = f.read("temp", mtu: 23)
        f.handler.reads[0].answer(.answered(value))
        f.scheduler.advance(by: .seconds(1))
        #expect(f.read("temp", mtu: 23).value == .success(value), "within the limit: still under way")
        #expect(f.handler.reads.count == 1)
        f.scheduler.advance(by: .seconds(3))
        _ = f.read("temp", mtu: 23)
        #expect(f.handler.reads.count == 2, "abandoned: the handler is asked again")
        #expect(f.read("temp", device: "/dev_B", mtu: 23).value == nil, "another central asks for itself")
        #expect(f.handler.reads.count == 3)
    }

    @Test("a handler's refusal is the ATT result; an answer of the wrong length is 0x0E")
    func refusalsAndBadAnswers() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp", "strict"], for: f.handler) == nil)
        let refused = f.read("temp")
        f.handler.reads[0].answer(.refused(.application(0x81)))
        #expect(refused.value == .failure(.application(0x81)))
        let tooLong = f.read("strict")
        f.handler.reads[1].answer(.answered([1, 2]))
        #expect(tooLong.value == .failure(.unlikely))
    }

    @Test("no answer gets the fallback: the stored value, or the configured ATT error")
    func fallbacks() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp", "strict"], for: f.handler) == nil)
        let read = f.read("temp")
        f.handler.reads[0].answer(.unavailable(reason: "timed out"))
        #expect(read.value == .success([0, 0]))
        let strict = f.read("strict")
        f.handler.reads[1].answer(.unavailable(reason: "left the bus"))
        #expect(strict.value == .failure(.application(0x81)))
        let write = f.write("temp", [5])
        f.handler.writes[0].answer(.unavailable(reason: "timed out"))
        #expect(write.value == "accepted")
        #expect(f.database["temp"]!.value == [5], "fallback value: the write is stored as without a handler")
        let strictWrite = f.write("strict", [9])
        f.handler.writes[1].answer(.unavailable(reason: "timed out"))
        #expect(strictWrite.value == "refused 0x81")
        #expect(f.database["strict"]!.value == [7])
    }

    @Test("with no handler registered, fallback \"error\" refuses reads and writes from the first request")
    func noHandlerFailsClosed() throws {
        let f = try Fixture()
        #expect(f.read("strict").value == .failure(.application(0x81)), "not the stored value")
        #expect(f.write("strict", [9]).value == "refused 0x81")
        #expect(f.database["strict"]!.value == [7], "a refused write is not stored")
        #expect(f.write("strict", [1, 2]).value == "refused 0xd", "validation still comes first")
        #expect(f.read("temp").value == .success([0, 0]), "fallback \"value\": the stored value")
        #expect(f.write("temp", [5]).value == "accepted")
        let set = Box<String>()
        f.service.set(f.database["strict"]!, to: [3]) { set.value = (try? $0.get()) != nil ? "set" : "refused" }
        #expect(set.value == "set", "SetValue is the program itself, not a central")
        #expect(f.database["strict"]!.value == [3])
        // A handler that came and went: refused again, as before it came.
        #expect(f.service.handlers.claim(["strict"], for: f.handler) == nil)
        #expect(f.service.handlers.release(f.handler) == ["strict"])
        #expect(f.read("strict").value == .failure(.application(0x81)))
        #expect(f.write("strict", [4]).value == "refused 0x81")
        #expect(f.handler.reads.isEmpty && f.handler.writes.isEmpty)
    }

    @Test("an answer of the wrong type is refused, never served from the stored value nor stored")
    func malformedAnswersAreRefused() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["temp", "strict"], for: f.handler) == nil)
        let read = f.read("temp")
        f.handler.reads[0].answer(.malformed(reason: "Read answered with (s), not (ay)"))
        #expect(read.value == .failure(.unlikely), "fallback \"value\" does not cover a wrong answer: 0x0E")
        let strictRead = f.read("strict")
        f.handler.reads[1].answer(.malformed(reason: "Read answered with (s), not (ay)"))
        #expect(strictRead.value == .failure(.application(0x81)), "the fallback's error where one is set")
        let write = f.write("temp", [5])
        f.handler.writes[0].answer(.malformed(reason: "Write answered with (b), not ()"))
        #expect(write.value == "refused 0xe")
        #expect(f.database["temp"]!.value == [0, 0])
        let strictWrite = f.write("strict", [5])
        f.handler.writes[1].answer(.malformed(reason: "Write answered with (b), not ()"))
        #expect(strictWrite.value == "refused 0x81")
        #expect(f.database["strict"]!.value == [7])
    }

    @Test("writes are validated first, then decided by the handler, then stored")
    func writesAreDecided() throws {
        let f = try Fixture()
        #expect(f.service.handlers.claim(["strict"], for: f.handler) == nil)
        #expect(f.write("strict", [1, 2]).value == "refused 0xd")
        #expect(f.handler.writes.isEmpty, "an invalid write never reaches the handler")
        let accepted = f.write("strict", [3])
        #expect(accepted.value == nil)
        #expect(f.database["strict"]!.value == [7], "nothing stored before the handler decides")
        f.handler.writes[0].answer(.answered(()))
        #expect(accepted.value == "accepted")
        #expect(f.database["strict"]!.value == [3])
        let refused = f.write("strict", [4])
        f.handler.writes[1].answer(.refused(.application(0x82)))
        #expect(refused.value == "refused 0x82")
        #expect(f.database["strict"]!.value == [3])
    }

    @Test("a second claimant is refused; a released handler's attributes fall back to the database")
    func claims() throws {
        let f = try Fixture()
        let other = FakeHandler(":1.10 /other")
        #expect(f.service.handlers.claim(["temp"], for: f.handler) == nil)
        #expect(f.service.handlers.claim(["plain", "temp"], for: other) == .alreadyClaimed(id: "temp", by: ":1.9 /sensor"))
        #expect(f.service.handlers.handler(of: "plain") == nil, "all or nothing")
        #expect(f.service.handlers.claim(["nope"], for: other) == .unknownID("nope"))
        #expect(f.service.handlers.release(f.handler) == ["temp"])
        #expect(f.read("temp").value == .success([0, 0]))
        #expect(f.handler.reads.isEmpty)
        #expect(f.service.handlers.claim(["temp"], for: other) == nil)
    }
}
