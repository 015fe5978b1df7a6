// SPDX-License-Identifier: MIT

import Glibc
import Logging

/// Where gattd's log lines go.
public enum LoggingBackend: Equatable, Sendable {
    /// Structured entries through journald's native socket (`JournalLogHandler`).
    case journald
    /// Plain lines on stderr (`StderrLogHandler`).
    case stderr
}

/// Picks the log backend at startup. The daemon applies `--log-level` to the handler.
public enum LoggingBootstrap {
    /// journald's native-protocol socket, the one `sd_journal_sendv` writes to.
    public static let journalSocketPath = "/run/systemd/journal/socket"

    /// `.journald` when `JOURNAL_STREAM` is set and names the stream stderr is connected to
    /// (as sd-daemon(3) recommends, so a user's `2>file` redirection is honoured), and the
    /// journald socket exists; `.stderr` otherwise.
    ///
    /// - Parameters:
    ///   - environment: the process environment (`processEnvironment()` in the daemon).
    ///   - journalSocketPath: where to look for journald's socket (tests substitute one).
    ///   - stderrIdentity: device and inode of stderr; `nil` when stderr is closed.
    public static func choose(
        environment: [String: String],
        journalSocketPath: String = journalSocketPath,
        stderrIdentity: StreamIdentity? = StreamIdentity(fileDescriptor: STDERR_FILENO)
    ) -> LoggingBackend {
        guard let stream = environment["JOURNAL_STREAM"].flatMap(StreamIdentity.init(journalStream:)),
              let stderrIdentity, stream == stderrIdentity,
              isSocket(journalSocketPath)
        else { return .stderr }
        return .journald
    }

    /// A handler for the backend, with `identifier` as `SYSLOG_IDENTIFIER` for journald.
    public static func makeHandler(
        for backend: LoggingBackend,
        identifier: String = "gattd",
        logLevel: Logger.Level = .info
    ) -> any LogHandler {
        switch backend {
        case .journald: return JournalLogHandler(identifier: identifier, logLevel: logLevel)
        case .stderr: return StderrLogHandler(logLevel: logLevel)
        }
    }

    /// The current environment as a dictionary, read from `environ` (first value wins).
    public static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                let key = String(text[..<equals])
                if result[key] == nil { result[key] = String(text[text.index(after: equals)...]) }
            }
            cursor += 1
        }
        return result
    }

    private static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }
}
