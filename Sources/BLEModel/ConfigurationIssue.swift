// SPDX-License-Identifier: MIT

/// One problem found while loading a configuration.
///
/// `path` is the JSON path of the offending value (`services[0].characteristics[2].flags[1]`);
/// it is empty for problems with the file as a whole (unreadable file, JSON syntax).
/// `line`/`column` locate the value in the file when known.
public struct ConfigurationIssue: Sendable, Equatable, CustomStringConvertible {
    public enum Severity: String, Sendable, Equatable {
        /// The configuration cannot be used.
        case error
        /// The configuration works, but probably not as the author meant.
        case warning
    }

    public var path: String
    public var message: String
    public var severity: Severity
    public var line: Int?
    public var column: Int?

    public init(path: String, message: String, severity: Severity = .error, line: Int? = nil, column: Int? = nil) {
        self.path = path
        self.message = message
        self.severity = severity
        self.line = line
        self.column = column
    }

    /// `path: message`, prefixed `warning: ` for warnings. Without a path:
    /// `line L, column C: message` when the position is known, else just the message.
    public var description: String {
        let prefix = severity == .warning ? "warning: " : ""
        if !path.isEmpty { return "\(prefix)\(path): \(message)" }
        if let line, let column { return "\(prefix)line \(line), column \(column): \(message)" }
        return prefix + message
    }

    /// `file:line:column: path: message` (or `file: path: message` without a position),
    /// the form editors and compilers use, so a click or `vim file +line` lands on it.
    public func located(in file: String) -> String {
        guard let line, let column else { return "\(file): \(description)" }
        let prefix = severity == .warning ? "warning: " : ""
        let text = path.isEmpty ? message : "\(path): \(message)"
        return "\(file):\(line):\(column): \(prefix)\(text)"
    }
}
