// SPDX-License-Identifier: MIT

import DaemonCore
import Glibc
import Mainloop
import Testing

@Suite("ChildProcess")
struct ChildProcessTests {
    private static func run(
        _ argv: [String], environment: [String: String] = [:], stdin: [UInt8] = [], timeout: Duration = .seconds(5),
        loop: EventLoop
    ) throws -> (ChildProcess, ChildProcess.Completion?) {
        var result: ChildProcess.Completion?
        let child = try ChildProcess.start(
            argv: argv, environment: environment, stdin: stdin, timeout: timeout, loop: loop
        ) { result = $0 }
        loop.run(until: { result != nil }, timeout: .seconds(20))
        return (child, result)
    }

    @Test("stdout, exit status, environment and stdin reach the caller; argv is not shell-split")
    func outputAndEnvironment() throws {
        let loop = try EventLoop()
        let (_, done) = try Self.run(
            ["/bin/sh", "-c", "printf '%s|' \"$GATT_X\" \"$1\"; cat; exit 3", "sh", "a b;$(echo no)"],
            environment: ["GATT_X": "x y"], stdin: Array("in\u{0}put".utf8), loop: loop)
        #expect(done?.outcome == .exited(3))
        #expect(done?.output == Array("x y|a b;$(echo no)|in\u{0}put".utf8))
    }

    @Test("a child past its timeout is killed with SIGKILL and reaped")
    func timeoutKills() throws {
        let loop = try EventLoop()
        let started = ContinuousClock.now
        // The shell traps TERM, so only SIGKILL ends it. It has 1 s to print "started" (a loaded
        // or emulated machine starts a shell slowly); the bound below is the child's 30 s sleep:
        // what is asserted is that gattd did not wait it out, not how fast the machine is.
        let (child, done) = try Self.run(
            ["/bin/sh", "-c", "trap '' TERM; echo started; exec sleep 30"], timeout: .seconds(1), loop: loop)
        #expect(done?.outcome == .timedOut)
        #expect(done?.output == Array("started\n".utf8))
        #expect(ContinuousClock.now - started < .seconds(25))
        #expect(!child.isRunning)
        // Reaped: the pid no longer exists (not even as a zombie).
        #expect(kill(child.pid, 0) == -1 && errno == ESRCH)
    }

    @Test("a grandchild holding stdout open does not delay completion")
    func grandchildKeepsPipe() throws {
        let loop = try EventLoop()
        let started = ContinuousClock.now
        let (_, done) = try Self.run(["/bin/sh", "-c", "echo 42; sleep 30 & exit 0"], loop: loop)
        #expect(done?.outcome == .exited(0))
        #expect(done?.output == Array("42\n".utf8))
        #expect(ContinuousClock.now - started < .seconds(25))  // the grandchild's sleep was not waited out
    }

    @Test("a missing program fails to start with its name and errno")
    func missingProgram() throws {
        let loop = try EventLoop()
        #expect(throws: ChildProcessError(operation: "start", path: "/nonexistent/prog", code: ENOENT)) {
            _ = try ChildProcess.start(argv: ["/nonexistent/prog"], timeout: .seconds(1), loop: loop) { _ in }
        }
    }

    @Test("a child that does not read stdin does not kill the daemon (SIGPIPE)")
    func unreadStdin() throws {
        let loop = try EventLoop()
        let (_, done) = try Self.run(["/bin/true"], stdin: [UInt8](repeating: 7, count: 200_000), loop: loop)
        #expect(done?.outcome == .exited(0))
    }
}
