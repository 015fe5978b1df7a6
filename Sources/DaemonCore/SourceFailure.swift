// SPDX-License-Identifier: MIT

/// Why a tick produced no value. The current value stays.
///
/// `kind` groups failures for logging (`FailureLog` logs a kind once, not every tick):
/// `open: No such file or directory`, `not a number`, `exit status 1`, `timed out`.
public struct SourceFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var kind: String
    /// The detail of this occurrence (the offending text, the path).
    public var detail: String

    public init(kind: String, detail: String = "") {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? kind : "\(kind): \(detail)" }
}
