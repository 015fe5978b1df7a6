// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Logging
import Mainloop
import TestSupport
import Testing

@Suite("Write hooks")
struct WriteHookTests {
    private static func runner(
        _ argv: [String], decides: Bool, timeoutMs: Int = 2000, loop: EventLoop, logger: Logger = quietLogger
    ) throws -> (WriteHookRunner, Attribute) {
        let argvJSON = "[" + argv.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }.joined(separator: ",") + "]"
        let configuration = try liveConfiguration("""
            {"version": 1, "services": [{"uuid": "180D", "characteristics": [
              {"id": "control", "uuid": "2A39", "flags": ["write"], "maxLength": 8,
               "onWrite": {"argv": \(argvJSON), "timeoutMs": \(timeoutMs), "decides": \(decides)}}]}]}
            """)
        // As the daemon builds it: the runtime's runner, its programs on `loop`.
        let runtime = RuntimeFactory(loop: loop, state: .none, logger: logger).makeService(configuration).runtime
        return (runtime.writeHooks, try #require(runtime.database["control"]))
    }

    private static func decide(
        _ argv: [String], bytes: [UInt8] = [0x01], timeoutMs: Int = 2000, log: RecordedLog? = nil
    ) throws -> GATTError?? {
        let loop = try EventLoop()
        let (runner, attribute) = try runner(
            argv, decides: true, timeoutMs: timeoutMs, loop: loop, logger: log?.logger ?? quietLogger)
        var verdict: GATTError??
        runner.decide(attribute, bytes: bytes, offset: 0, device: "/org/bluez/hci0/dev_X") { verdict = .some($0) }
        loop.run(until: { verdict != nil }, timeout: .seconds(10))
        return verdict
    }

    @Test("exit 0 accepts, 128...159 is the ATT application error, anything else is unlikely")
    func verdicts() throws {
        #expect(try Self.decide(["/bin/true"]) == .some(nil))
        #expect(try Self.decide(["/bin/sh", "-c", "exit 128"]) == .some(.application(0x80)))
        #expect(try Self.decide(["/bin/sh", "-c", "exit 159"]) == .some(.application(0x9F)))
        #expect(try Self.decide(["/bin/sh", "-c", "exit 160"]) == .some(.unlikely))
        #expect(try Self.decide(["/bin/false"]) == .some(.unlikely))
        #expect(try Self.decide(["/bin/sh", "-c", "kill -9 $$"]) == .some(.unlikely))
        #expect(try Self.decide(["/nonexistent/hook"]) == .some(.unlikely))
        #expect(try Self.decide(["/bin/sleep", "30"], timeoutMs: 100) == .some(.unlikely))
    }

    @Test("a deciding hook that cannot start, times out or is killed refuses with 0x0E and says why")
    func noVerdictFailsClosed() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let notExecutable = try dir.file("not-executable", "exit 0\n")  // mode 0644: execve says EACCES
        let missing = RecordedLog()
        #expect(try Self.decide([dir.path + "/missing-hook"], log: missing) == .some(.unlikely))
        #expect(missing.has(.error, "write hook cannot start", containing: ["No such file"]))
        #expect(missing.has(.warning, "write refused: the deciding hook could not run", containing: ["gatt.id=control"]))
        let denied = RecordedLog()
        #expect(try Self.decide([notExecutable], log: denied) == .some(.unlikely))
        #expect(denied.has(.error, "write hook cannot start", containing: ["Permission denied"]))
        #expect(denied.has(.warning, "write refused: the deciding hook could not run"))
        let slow = RecordedLog()
        #expect(try Self.decide(["/bin/sleep", "30"], timeoutMs: 100, log: slow) == .some(.unlikely))
        #expect(slow.has(.warning, "write refused: the deciding hook gave no verdict (timed out)", containing: ["0xe"]))
        let killed = RecordedLog()
        #expect(try Self.decide(["/bin/sh", "-c", "kill -9 $$"], log: killed) == .some(.unlikely))
        #expect(killed.has(.warning, "write refused: the deciding hook gave no verdict (killed by signal 9)"))
        let refused = RecordedLog()
        #expect(try Self.decide(["/bin/sh", "-c", "exit 130"], log: refused) == .some(.application(0x82)))
        #expect(refused.has(.info, "write hook refused the write", containing: ["0x82"]), "a verdict, not a failure")
    }

    @Test("the hook sees the value as GATT_VALUE_HEX and on stdin, never in argv")
    func environmentAndStdin() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let script = try dir.script(
            "hook",
            "printf '%s %s %s %s %s %s %s' \"$GATT_VALUE_HEX\" \"$GATT_ID\" \"$GATT_UUID\" \"$GATT_DEVICE\" \"$GATT_DEVICE_PATH\" \"$GATT_OFFSET\" \"$#\" > \(dir.path)/env; cat > \(dir.path)/stdin"
        )
        let loop = try EventLoop()
        // Run through /bin/sh rather than exec'ing the fresh file: a child forked meanwhile by a
        // test running in parallel can still hold the file's write descriptor, and execve of a
        // file open for writing fails with ETXTBSY.
        let (runner, attribute) = try Self.runner(["/bin/sh", script], decides: false, loop: loop)
        let value: [UInt8] = [0x27, 0x3B, 0x0A, 0x00, 0xFF]  // ' ; newline NUL
        runner.written(attribute, bytes: value, offset: 0, device: "/org/bluez/hci0/dev_X", address: "00:AA:01:01:00:01")
        #expect(runner.runningCount("control") == 1)
        #expect(loop.run(until: { runner.runningCount("control") == 0 }, timeout: .seconds(10)))
        #expect(
            dir.read("env")
                == "273b0a00ff control 00002a39-0000-1000-8000-00805f9b34fb 00:AA:01:01:00:01 /org/bluez/hci0/dev_X 0 0")
        #expect(dir.bytes("stdin") == value)
    }

    @Test("at most maximumRunning hooks run per characteristic; the next decision is unlikely")
    func boundedConcurrency() throws {
        let loop = try EventLoop()
        let (runner, attribute) = try Self.runner(["/bin/sleep", "30"], decides: true, timeoutMs: 300, loop: loop)
        var verdicts: [GATTError?] = []
        for _ in 0..<(WriteHookRunner.maximumRunning + 1) {
            runner.decide(attribute, bytes: [1], offset: 0, device: nil) { verdicts.append($0) }
        }
        #expect(verdicts == [.unlikely], "the one over the limit is answered at once")
        #expect(runner.runningCount("control") == WriteHookRunner.maximumRunning)
        #expect(loop.run(until: { runner.runningCount("control") == 0 }, timeout: .seconds(10)))
        #expect(verdicts.count == WriteHookRunner.maximumRunning + 1)
        #expect(verdicts.allSatisfy { $0 == .unlikely }, "the timeout kills each and answers unlikely")
    }
}
