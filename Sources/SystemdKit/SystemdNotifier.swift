// SPDX-License-Identifier: MIT

import Glibc
import SystemCalls

/// Tells the service manager about gattd's state, as `sd_notify(3)` does.
///
/// Every message is one datagram of newline-separated `KEY=VALUE` assignments sent to the
/// socket named by `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace). The
/// variables are read once, from the environment given to `init` (the process's by
/// default), so tests pass their own instead of changing the process environment while
/// other tests run. When `NOTIFY_SOCKET` is unset (gattd not started by systemd, or the
/// unit is not `Type=notify`) every call is a no-op that returns `false`. The environment
/// is left untouched, so child processes inherit `NOTIFY_SOCKET`; the unit's
/// `NotifyAccess=main` makes systemd ignore them.
public struct SystemdNotifier: Sendable {
    /// The interval systemd expects `WATCHDOG=1` within, read from `WATCHDOG_USEC`
    /// (and `WATCHDOG_PID`, which must name this process) when the notifier was created;
    /// `nil` when the watchdog is off or the variables are malformed. Ping at half of it.
    public let watchdogInterval: Duration?
    /// `NOTIFY_SOCKET`, nil when unset or empty.
    let socketPath: String?

    /// Reads `NOTIFY_SOCKET` and the watchdog settings from `environment` once.
    public init(environment: [String: String] = LoggingBootstrap.processEnvironment()) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        watchdogInterval = (try? Self.readWatchdogInterval(environment: environment)) ?? nil
    }

    /// Whether `NOTIFY_SOCKET` is set, i.e. whether messages go anywhere.
    public var isEnabled: Bool { socketPath != nil }

    /// Reads `WATCHDOG_USEC`/`WATCHDOG_PID` as `sd_watchdog_enabled(0, …)` does.
    ///
    /// - Returns: the interval, or `nil` when the watchdog is not enabled for this process.
    /// - Throws: `SystemdError.system` (`EINVAL`) when the variables are malformed.
    public static func readWatchdogInterval(
        environment: [String: String] = LoggingBootstrap.processEnvironment()
    ) throws(SystemdError) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"] else { return nil }
        guard let usec = UInt64(text), usec > 0 else {
            throw .system(SystemCallError(operation: "sd_watchdog_enabled", code: EINVAL))
        }
        if let pidText = environment["WATCHDOG_PID"] {
            guard let pid = pid_t(pidText), pid > 0 else {
                throw .system(SystemCallError(operation: "sd_watchdog_enabled", code: EINVAL))
            }
            guard pid == getpid() else { return nil }
        }
        return .microseconds(Int64(clamping: usec))
    }

    /// `READY=1`, optionally with `STATUS=` in the same datagram: startup is finished.
    @discardableResult
    public func ready(status: String? = nil) throws(SystemdError) -> Bool {
        var assignments = [("READY", "1")]
        if let status { assignments.append(("STATUS", status)) }
        return try send(assignments)
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (required by systemd 253+ for
    /// `Type=notify-reload`, ignored by 252). Send `ready()` when the reload is done.
    @discardableResult
    public func reloading() throws(SystemdError) -> Bool {
        try send([("RELOADING", "1"), ("MONOTONIC_USEC", String(Self.monotonicMicroseconds()))])
    }

    /// `STOPPING=1`: shutdown has begun.
    @discardableResult
    public func stopping() throws(SystemdError) -> Bool {
        try send([("STOPPING", "1")])
    }

    /// `STATUS=<text>`: a one-line, human-readable state shown by `systemctl status`.
    @discardableResult
    public func status(_ text: String) throws(SystemdError) -> Bool {
        try send([("STATUS", text)])
    }

    /// `WATCHDOG=1`: the event loop is alive. Send it from the loop itself.
    @discardableResult
    public func watchdog() throws(SystemdError) -> Bool {
        try send([("WATCHDOG", "1")])
    }

    /// Sends the assignments as one datagram, in the given order.
    ///
    /// - Returns: `true` if sent, `false` if `NOTIFY_SOCKET` is unset.
    /// - Throws: `invalidAssignment` for an unencodable pair (nothing is sent),
    ///   `system` when the socket write fails.
    @discardableResult
    public func send(_ assignments: [(String, String)]) throws(SystemdError) -> Bool {
        let message = try Self.encode(assignments)
        guard let socketPath else { return false }
        let sent: Int
        do throws(SystemCallError) {
            sent = try Self.sendDatagram(message, to: socketPath)
        } catch {
            throw .system(SystemCallError(operation: "sd_notify", code: error.code))
        }
        return sent >= 0
    }

    /// One datagram to the Unix socket at `path` (`@name`: abstract namespace).
    static func sendDatagram(_ message: String, to path: String) throws(SystemCallError) -> Int {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name: [UInt8] = Array(path.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 }
        let capacity: Int = MemoryLayout.size(ofValue: address.sun_path)
        guard !name.isEmpty, name.count < capacity else { throw SystemCallError(operation: "sendto", path: path, code: EINVAL) }
        withUnsafeMutableBytes(of: &address.sun_path) { (buffer: UnsafeMutableRawBufferPointer) in buffer.copyBytes(from: name) }
        let pathOffset: Int = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        let length = socklen_t(pathOffset + name.count)
        let type: Int32 = Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let descriptor: Int32 = try SystemCall.check("socket") { socket(AF_UNIX, type, 0) }
        defer { close(descriptor) }
        let bytes: [UInt8] = Array(message.utf8)
        let sent: Int = bytes.withUnsafeBytes { (body: UnsafeRawBufferPointer) -> Int in
            withUnsafePointer(to: &address) { (pointer: UnsafePointer<sockaddr_un>) -> Int in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (raw: UnsafePointer<sockaddr>) -> Int in
                    SystemCall.retrying { sendto(descriptor, body.baseAddress, body.count, Int32(MSG_NOSIGNAL), raw, length) }
                }
            }
        }
        guard sent >= 0 else { throw SystemCallError(operation: "sendto", path: path, code: errno) }
        return sent
    }

    /// Encodes assignments as the newline-separated `KEY=VALUE` text of the protocol.
    static func encode(_ assignments: [(String, String)]) throws(SystemdError) -> String {
        var lines: [String] = []
        lines.reserveCapacity(assignments.count)
        for (key, value) in assignments {
            if key.isEmpty {
                throw .invalidAssignment(key: key, reason: "empty key")
            }
            if key.contains("=") || key.contains("\n") {
                throw .invalidAssignment(key: key, reason: "key contains '=' or a newline")
            }
            if value.contains("\n") {
                throw .invalidAssignment(key: key, reason: "value contains a newline")
            }
            lines.append("\(key)=\(value)")
        }
        return lines.joined(separator: "\n")
    }

    /// CLOCK_MONOTONIC in microseconds, the clock systemd compares `MONOTONIC_USEC` with.
    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
