// SPDX-License-Identifier: MIT

/// Why a state file could not be read as a `StateDocument`.
///
/// `path` names the JSON value at fault in the style of configuration issues
/// (`characteristics["label"].value`); it is empty for a syntax error, whose position is
/// in `message`. `description` reads `characteristics["label"].value: odd number of hex digits`.
public struct StateDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not JSON at all: truncated, garbage, invalid UTF-8.
        case syntax
        /// JSON, but not the version-1 shape (wrong type, missing key, bad hex, bad UUID).
        case shape
        /// Written by a newer gattd: this build reads up to `StateDocument.currentVersion`.
        case futureVersion(Int64)
    }

    public var kind: Kind
    public var path: String
    public var message: String

    public init(_ kind: Kind, path: String, message: String) {
        self.kind = kind
        self.path = path
        self.message = message
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}
