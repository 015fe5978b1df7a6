// SPDX-License-Identifier: MIT

public import InMemoryLogging
public import Logging

/// The logger every test passes where a `Logger` is needed and nothing checks the log:
/// it drops everything, so the test output shows only what the tests say.
public let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A logger that keeps what it is given, for tests that check what an operator would
/// read: swift-log's `InMemoryLogHandler` at trace level, its entries read as lines
/// `level message key=value ...` (keys sorted).
public struct RecordedLog: Sendable {
    public let handler = InMemoryLogHandler()

    public init() {}

    public var logger: Logger {
        var logger = Logger(label: "test") { [handler] _ in handler }
        logger.logLevel = .trace
        return logger
    }

    public var lines: [String] {
        handler.entries.map { entry in
            let fields = entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            return "\(entry.level) \(entry.message) \(fields.joined(separator: " "))"
        }
    }

    /// Whether a line at `level` starts with `message` and contains each of `containing`.
    public func has(_ level: Logger.Level, _ message: String, containing: [String] = []) -> Bool {
        lines.contains { line in
            line.hasPrefix("\(level) \(message)") && containing.allSatisfy { line.contains($0) }
        }
    }
}
