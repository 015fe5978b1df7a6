// SPDX-License-Identifier: MIT

/// A place in JSON source text.
///
/// `line` and `column` are 1-based; `column` counts Unicode scalars (not bytes) from the
/// start of the line, so it matches what an editor shows for UTF-8 text.
public struct SourcePosition: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `line L, column C`, the prefix used by every positioned message.
    public var description: String { "line \(line), column \(column)" }
}
