// SPDX-License-Identifier: MIT

import Glibc
import SystemCalls
import Testing

@testable import SystemdKit

/// Each test gives the notifier an environment of its own: the process environment is
/// never changed, so these run in parallel with every other suite.
struct SystemdNotifierTests {
    @Test func notifySocketReceivesLifecycleInOrder() throws {
        let socket = try DatagramReceiver(name: "notify")
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path])
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
        #expect(try SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path]).send([("STATUS", "2 subscriptions"), ("ERRNO", "0")]))
        #expect(socket.receiveText() == "STATUS=2 subscriptions\nERRNO=0")
    }

    @Test func invalidAssignmentThrowsAndSendsNothing() throws {
        let socket = try DatagramReceiver(name: "notify")
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path])
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
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        #expect(try notifier.ready() == false)
        #expect(try notifier.status("idle") == false)
    }

    @Test func unreachableNotifySocketIsAnError() throws {
        let socket = try DatagramReceiver(name: "notify")
        #expect(throws: SystemdError.system(SystemCallError(operation: "sd_notify", code: ENOENT))) {
            try SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.directory + "/absent"]).ready()
        }
    }

    @Test func watchdogIntervalFromEnvironment() throws {
        let pid = String(getpid())
        func interval(_ environment: [String: String]) -> Duration? {
            SystemdNotifier(environment: environment).watchdogInterval
        }
        #expect(interval(["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": pid]) == .seconds(20))
        #expect(interval(["WATCHDOG_USEC": "20000000"]) == .seconds(20))
        // Meant for another process (e.g. inherited from a parent service): not ours.
        #expect(interval(["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": String(getpid() + 1)]) == nil)
        #expect(interval([:]) == nil)
        #expect(interval(["WATCHDOG_USEC": "soon"]) == nil)
        #expect(throws: SystemdError.self) { try SystemdNotifier.readWatchdogInterval(environment: ["WATCHDOG_USEC": "soon"]) }
        #expect(throws: SystemdError.self) { try SystemdNotifier.readWatchdogInterval(environment: ["WATCHDOG_USEC": "0"]) }
    }

    @Test func abstractNamespaceSocket() throws {
        let name = "gattd-notifier-test-\(getpid())"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(receiver) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = [UInt8(0)] + Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, length) }
        }
        try #require(bound == 0)
        #expect(try SystemdNotifier(environment: ["NOTIFY_SOCKET": "@" + name]).ready())
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = recv(receiver, &buffer, buffer.count, 0)
        #expect(String(decoding: buffer[..<max(count, 0)], as: UTF8.self) == "READY=1")
    }

    @Test func checkErrnoPassesResultsAndThrowsNegatives() throws {
        #expect(try checkErrno(3, "op") == 3)
        #expect(try checkErrno(0, "op") == 0)
        #expect(throws: SystemdError.system(SystemCallError(operation: "op", code: EINVAL))) { try checkErrno(-EINVAL, "op") }
        #expect(SystemdError.system(SystemCallError(operation: "sd_notify", code: ENOENT)).description
            == "sd_notify: No such file or directory (errno 2)")
    }
}
