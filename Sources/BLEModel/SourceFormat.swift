// SPDX-License-Identifier: MIT

/// How a file or command source's output is read.
public enum SourceFormat: String, Sendable, Equatable, CaseIterable {
    /// A decimal number (surrounding whitespace ignored), encoded through the template.
    case number
    /// UTF-8 text with one trailing newline removed, encoded through the template.
    case text
    /// The raw bytes, used as the value as is (files only).
    case bytes
}
