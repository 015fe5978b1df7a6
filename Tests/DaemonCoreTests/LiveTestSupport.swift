// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Foundation
import Logging
import Mainloop

/// A logger that drops everything (tests assert on counters, not on log text).
let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// Parses a configuration that the test knows to be valid.
func liveConfiguration(_ json: String) throws -> Configuration {
    try ConfigurationLoader.parse(Array(json.utf8)).get().configuration
}

/// Repeating timers that fire only when the test says so.
final class ManualTimers {
    private(set) var periods: [Int: Duration] = [:]
    private var ticks: [Int: () -> Void] = [:]
    private var next = 0

    var timers: UpdateTimers {
        UpdateTimers { [unowned self] _, period, tick in
            let id = self.next
            self.next += 1
            self.ticks[id] = tick
            self.periods[id] = period
            return { [unowned self] in
                self.ticks[id] = nil
                self.periods[id] = nil
            }
        }
    }

    var activeCount: Int { ticks.count }

    /// One tick of every running timer.
    func fireAll() {
        for id in ticks.keys.sorted() { ticks[id]?() }
    }
}

/// A clock that moves only when the test advances it, firing due one-shot timers in order.
/// Like the loop, it reports a firing timer's instant as `due`; `tick(dueAt:)` plays a
/// periodic timer's tick that was due at one instant and ran at `now`.
final class ManualClock {
    private(set) var now = ContinuousClock.now
    private var pending: [(at: ContinuousClock.Instant, order: Int, job: () -> Void)] = []
    private var order = 0
    private var running: ContinuousClock.Instant?

    var clock: LoopClock {
        LoopClock(
            now: { [unowned self] in self.now },
            at: { [unowned self] instant, job in
                self.order += 1
                let mine = self.order
                self.pending.append((instant, mine, job))
                return { [unowned self] in self.pending.removeAll { $0.order == mine } }
            },
            due: { [unowned self] in self.running ?? self.now })
    }

    /// Runs `work` as a timer's handler due at `due` (now is when it actually runs).
    func tick(dueAt due: ContinuousClock.Instant, _ work: () -> Void) {
        running = due
        work()
        running = nil
    }

    var pendingCount: Int { pending.count }

    func advance(by duration: Duration) {
        let target = now + duration
        while let due = pending.filter({ $0.at <= target }).min(by: { ($0.at, $0.order) < ($1.at, $1.order) }) {
            pending.removeAll { $0.order == due.order }
            now = max(now, due.at)
            running = due.at
            due.job()
            running = nil
        }
        now = target
    }
}

/// A scratch directory with small files and executable scripts.
final class ScratchDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "gattd-live-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    @discardableResult
    func file(_ name: String, _ contents: String) throws -> String {
        let full = path + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    /// A `/bin/sh` script, made executable.
    func script(_ name: String, _ body: String) throws -> String {
        let full = try file(name, "#!/bin/sh\n" + body + "\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: full)
        return full
    }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    func bytes(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path + "/" + name).map { Array($0) }
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A logger whose lines a test can read: `level message key=value ...`, for checking
/// that a refusal names its cause.
final class RecordedLog: @unchecked Sendable {
    private var recorded: [String] = []
    private let lock = NSLock()

    var lines: [String] { lock.withLock { recorded } }

    var logger: Logger { Logger(label: "test") { _ in Handler(log: self) } }

    /// Whether a line at `level` starts with `message` and contains each of `containing`.
    func has(_ level: Logger.Level, _ message: String, containing: [String] = []) -> Bool {
        lines.contains { line in
            line.hasPrefix("\(level) \(message)") && containing.allSatisfy { line.contains($0) }
        }
    }

    private struct Handler: LogHandler {
        let log: RecordedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            let line = "\(event.level) \(event.message) \(fields.joined(separator: " "))"
            log.lock.withLock { log.recorded.append(line) }
        }
    }
}
