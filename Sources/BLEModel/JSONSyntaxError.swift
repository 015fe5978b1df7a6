// SPDX-License-Identifier: MIT

/// Malformed JSON: what was expected and where.
///
/// `description` reads `line 12, column 5: expected ',' or '}' after object member`.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var position: SourcePosition
    public var message: String

    public init(position: SourcePosition, message: String) {
        self.position = position
        self.message = message
    }

    public var description: String { "\(position): \(message)" }
}
