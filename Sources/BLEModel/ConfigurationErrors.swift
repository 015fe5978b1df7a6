// SPDX-License-Identifier: MIT

/// A configuration that cannot be used: every issue found (errors and warnings), in the
/// order they appear in the file.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var issues: [ConfigurationIssue]

    public init(issues: [ConfigurationIssue]) {
        self.issues = issues
    }

    /// Only the issues with severity `.error` (at least one).
    public var errors: [ConfigurationIssue] { issues.filter { $0.severity == .error } }

    /// One issue per line.
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
