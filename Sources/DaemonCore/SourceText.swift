// SPDX-License-Identifier: MIT

/// Parsing shared by file and command sources.
enum SourceText {
    /// `bytes` as UTF-8 with surrounding whitespace (spaces, tabs, newlines) removed;
    /// invalid UTF-8 is a failure.
    static func text(_ bytes: [UInt8]) -> Result<String, SourceFailure> {
        var slice = bytes[...]
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
        guard let text = String(validating: slice, as: UTF8.self) else {
            return .failure(SourceFailure(kind: "not UTF-8 text"))
        }
        return .success(text)
    }

    /// A decimal number (`42`, `-3.5`, `1e3`), surrounding whitespace ignored; `nan`,
    /// `inf` and hex floats are refused.
    static func number(_ bytes: [UInt8]) -> Result<Double, SourceFailure> {
        let text: String
        switch Self.text(bytes) {
        case .success(let trimmed): text = trimmed
        case .failure: return .failure(SourceFailure(kind: "not a number", detail: "output is not UTF-8"))
        }
        let allowed = text.utf8.allSatisfy { unit in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(unit) || unit == UInt8(ascii: "-")
                || unit == UInt8(ascii: "+") || unit == UInt8(ascii: ".") || unit == UInt8(ascii: "e")
                || unit == UInt8(ascii: "E")
        }
        guard allowed, let value = Double(text), value.isFinite else {
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            return .failure(SourceFailure(kind: "not a number", detail: "\"\(shown)\""))
        }
        return .success(value)
    }

    private static func isSpace(_ unit: UInt8) -> Bool {
        unit == 0x20 || unit == 0x09 || unit == 0x0A || unit == 0x0D
    }
}
