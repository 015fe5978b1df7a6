// SPDX-License-Identifier: MIT

import Glibc
import Testing

import SystemCalls
@testable import SystemdKit

/// These tests change NOTIFY_SOCKET / WATCHDOG_* of the test process, so they run one at a time.
@Suite(.serialized)
struct SystemdNotifierTests {
    @Test func notifySocketReceivesLifecycleInOrder() throws {
        let socket = try DatagramReceiver(name: "notify")
        setenv("NOTIFY_SOCKET", socket.path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        let notifier = SystemdNotifier()
        #expect(notifier.isEnabled)

        #expect(try notifier.status("waiting for org.bluez"))
        #expect(try notifier.ready(status: "serving 3 services on hci0"))
        #expect(try notifier.watchdog())
        let before = SystemdNotifier.monotonicMicroseconds()
        #expect(try notifier.reloading())
        let after = SystemdNotifier.monotonicMicroseconds()
        #expect(try notifier.ready())
        #expect(try notifier.stopping())

        #expect(socket.receiveText() == "STATUS=waiting for org.bluez")
        #expect(socket.receiveText() == "READY=1\nSTATUS=serving 3 services on hci0")
        #expect(socket.receiveText() == "WATCHDOG=1")
        let reload = try #require(socket.receiveText()).split(separator: "\n")
        #expect(reload.count == 2)
        #expect(reload.first == "RELOADING=1")
        let stampLine = try #require(reload.last)
        #expect(stampLine.hasPrefix("MONOTONIC_USEC="))
        let stamp = try #require(UInt64(stampLine.dropFirst("MONOTONIC_USEC=".count)))
        #expect((before...after).contains(stamp))
        #expect(socket.receiveText() == "READY=1")
        #expect(socket.receiveText() == "STOPPING=1")
    }

    @Test func sendKeepsAssignmentOrderInOneDatagram() throws {
        let socket = try DatagramReceiver(name: "notify")
        setenv("NOTIFY_SOCKET", socket.path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(try SystemdNotifier().send([("STATUS", "2 subscriptions"), ("ERRNO", "0")]))
        #expect(socket.receiveText() == "STATUS=2 subscriptions\nERRNO=0")
    }

    @Test func invalidAssignmentThrowsAndSendsNothing() throws {
        let socket = try DatagramReceiver(name: "notify")
        setenv("NOTIFY_SOCKET", socket.path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        let notifier = SystemdNotifier()
        #expect(throws: SystemdError.invalidAssignment(key: "STATUS", reason: "value contains a newline")) {
            try notifier.status("two\nlines")
        }
        #expect(throws: SystemdError.self) { try notifier.send([("A=B", "1")]) }
        #expect(throws: SystemdError.self) { try notifier.send([("", "1")]) }
        try notifier.watchdog()
        // The first datagram to arrive is the valid one: the rejected ones were never sent.
        #expect(socket.receiveText() == "WATCHDOG=1")
    }

    @Test func noOpWithoutNotifySocket() throws {
        unsetenv("NOTIFY_SOCKET")
        let notifier = SystemdNotifier()
        #expect(!notifier.isEnabled)
        #expect(try notifier.ready() == false)
        #expect(try notifier.status("idle") == false)
    }

    @Test func unreachableNotifySocketIsAnError() throws {
        let socket = try DatagramReceiver(name: "notify")
        setenv("NOTIFY_SOCKET", socket.directory + "/absent", 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(throws: SystemdError.system(SystemCallError(operation: "sd_notify", code: ENOENT))) {
            try SystemdNotifier().ready()
        }
    }

    @Test func watchdogIntervalFromEnvironment() throws {
        defer {
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        setenv("WATCHDOG_USEC", "20000000", 1)
        setenv("WATCHDOG_PID", String(getpid()), 1)
        #expect(SystemdNotifier().watchdogInterval == .seconds(20))

        unsetenv("WATCHDOG_PID")
        #expect(SystemdNotifier().watchdogInterval == .seconds(20))

        // Meant for another process (e.g. inherited from a parent service): not ours.
        setenv("WATCHDOG_PID", String(getpid() + 1), 1)
        #expect(SystemdNotifier().watchdogInterval == nil)

        unsetenv("WATCHDOG_PID")
        unsetenv("WATCHDOG_USEC")
        #expect(SystemdNotifier().watchdogInterval == nil)

        setenv("WATCHDOG_USEC", "soon", 1)
        #expect(SystemdNotifier().watchdogInterval == nil)
        #expect(throws: SystemdError.self) { try SystemdNotifier.readWatchdogInterval() }
    }

    @Test func checkErrnoPassesResultsAndThrowsNegatives() throws {
        #expect(try checkErrno(3, "op") == 3)
        #expect(try checkErrno(0, "op") == 0)
        #expect(throws: SystemdError.system(SystemCallError(operation: "op", code: EINVAL))) { try checkErrno(-EINVAL, "op") }
        #expect(SystemdError.system(SystemCallError(operation: "sd_notify", code: ENOENT)).description
            == "sd_notify: No such file or directory (errno 2)")
    }
}
