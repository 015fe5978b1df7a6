// SPDX-License-Identifier: MIT

import CSystemd
import Glibc

/// Tells the service manager about gattd's state through `sd_notify(3)`.
///
/// Every message is one datagram of newline-separated `KEY=VALUE` assignments sent to
/// `$NOTIFY_SOCKET`. When that variable is unset (gattd not started by systemd, or the
/// unit is not `Type=notify`) every call is a no-op that returns `false`.
/// The environment is left untouched, so child processes inherit `NOTIFY_SOCKET`;
/// the unit's `NotifyAccess=main` makes systemd ignore them.
public struct SystemdNotifier: Sendable {
    /// The interval systemd expects `WATCHDOG=1` within, read from `WATCHDOG_USEC`
    /// (and `WATCHDOG_PID`, which must name this process) when the notifier was created;
    /// `nil` when the watchdog is off or the variables are malformed. Ping at half of it.
    public let watchdogInterval: Duration?

    /// Reads the watchdog settings from the environment once.
    public init() {
        watchdogInterval = (try? Self.readWatchdogInterval()) ?? nil
    }

    /// Whether `NOTIFY_SOCKET` is set, i.e. whether messages go anywhere.
    public var isEnabled: Bool { getenv("NOTIFY_SOCKET") != nil }

    /// Reads `WATCHDOG_USEC`/`WATCHDOG_PID` via `sd_watchdog_enabled(0, …)`.
    ///
    /// - Returns: the interval, or `nil` when the watchdog is not enabled for this process.
    /// - Throws: `SystemdError.system` when the variables are malformed.
    public static func readWatchdogInterval() throws(SystemdError) -> Duration? {
        var usec: UInt64 = 0
        let enabled = try checkErrno(sd_watchdog_enabled(0, &usec), "sd_watchdog_enabled")
        guard enabled > 0 else { return nil }
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
        return try checkErrno(sd_notify(0, message), "sd_notify") > 0
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
