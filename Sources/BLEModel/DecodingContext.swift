// SPDX-License-Identifier: MIT

/// Shared state of one configuration decode: every issue found so far and the source
/// position of every JSON path visited, so later validation can point into the file.
///
/// Readers return nil after recording an issue; callers keep going so that one load
/// reports all problems.
struct DecodingContext {
    private(set) var issues: [ConfigurationIssue] = []
    private(set) var positions: [String: SourcePosition] = [:]

    var hasErrors: Bool { issues.contains { $0.severity == .error } }

    /// Paths of the decoding errors, as they were when the rules began (`beginRules`).
    private(set) var decodingErrorPaths: [String] = []

    /// The rules run next: what has failed to decode so far decides which rules can run.
    mutating func beginRules() {
        decodingErrorPaths = issues.filter { $0.severity == .error }.map(\.path)
    }

    /// Whether `fields` of the element at `element` all decoded: a rule that reads only
    /// those runs even when another field of the element is broken, so one `--check`
    /// reports every problem it can make sense of.
    func intact(_ element: String, _ fields: String...) -> Bool {
        for broken in decodingErrorPaths {
            if broken == element { return false }
            for field in fields {
                let path = element.isEmpty ? field : element + "." + field
                if broken == path || broken.hasPrefix(path + ".") || broken.hasPrefix(path + "[") { return false }
            }
        }
        return true
    }

    /// Whether an error has been reported so far at `path` or inside it (while decoding,
    /// before `beginRules`).
    func failed(_ path: String) -> Bool {
        issues.contains {
            $0.severity == .error && ($0.path == path || $0.path.hasPrefix(path + ".") || $0.path.hasPrefix(path + "["))
        }
    }

    mutating func error(_ path: String, _ message: String, at position: SourcePosition? = nil) {
        report(path, message, .error, at: position)
    }

    mutating func warning(_ path: String, _ message: String, at position: SourcePosition? = nil) {
        report(path, message, .warning, at: position)
    }

    private mutating func report(
        _ path: String, _ message: String, _ severity: ConfigurationIssue.Severity, at position: SourcePosition?
    ) {
        let where_ = position ?? positions[path]
        issues.append(
            ConfigurationIssue(
                path: path, message: message, severity: severity, line: where_?.line, column: where_?.column))
    }

    mutating func record(_ value: JSONValue, at path: String) {
        positions[path] = value.position
    }

    func position(of path: String) -> SourcePosition? { positions[path] }

    // MARK: - Typed readers

    mutating func string(_ value: JSONValue, _ path: String) -> String? {
        record(value, at: path)
        guard let text = value.stringValue else { return mismatch(value, path, "a string") }
        return text
    }

    mutating func bool(_ value: JSONValue, _ path: String) -> Bool? {
        record(value, at: path)
        guard case .bool(let flag) = value.kind else { return mismatch(value, path, "true or false") }
        return flag
    }

    mutating func integer(_ value: JSONValue, _ path: String, in range: ClosedRange<Int64>) -> Int64? {
        record(value, at: path)
        guard let number = value.numberValue else { return mismatch(value, path, "an integer") }
        guard number.isInteger else {
            error(path, "expected an integer, found \(number)")
            return nil
        }
        guard let exact = number.int64Value, range.contains(exact) else {
            error(path, "\(number) is out of range \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return exact
    }

    /// An integer written as a JSON number or as a string holding decimal or `0x` hex.
    mutating func integerOrHexString(_ value: JSONValue, _ path: String, in range: ClosedRange<Int64>) -> Int64? {
        if value.numberValue != nil { return integer(value, path, in: range) }
        record(value, at: path)
        guard let text = value.stringValue else { return mismatch(value, path, "an integer or a \"0x\" hex string") }
        return integerText(text, path, in: range)
    }

    /// Parses `"0x004C"` or `"76"` (used for map keys and string-valued numbers).
    mutating func integerText(_ text: String, _ path: String, in range: ClosedRange<Int64>) -> Int64? {
        let parsed: Int64?
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            parsed = text.count > 2 && text.count <= 18 ? Int64(text.dropFirst(2), radix: 16) : nil
        } else {
            parsed = text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ? Int64(text) : nil
        }
        guard let parsed else {
            error(path, "\"\(text)\" is not a decimal or \"0x\" hexadecimal integer")
            return nil
        }
        guard range.contains(parsed) else {
            error(path, "\(text) is out of range \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return parsed
    }

    mutating func number(_ value: JSONValue, _ path: String) -> Double? {
        record(value, at: path)
        guard let number = value.numberValue else { return mismatch(value, path, "a number") }
        guard number.doubleValue.isFinite else {
            error(path, "\(number) is out of range for a number")
            return nil
        }
        return number.doubleValue
    }

    mutating func array(_ value: JSONValue, _ path: String) -> [JSONValue]? {
        record(value, at: path)
        guard let elements = value.arrayValue else { return mismatch(value, path, "an array") }
        for (index, element) in elements.enumerated() { record(element, at: "\(path)[\(index)]") }
        return elements
    }

    /// An object whose keys must all be in `allowed`; unknown keys are reported (with
    /// `advice` for the key when it has some, else a suggestion) and skipped.
    mutating func object(
        _ value: JSONValue, _ path: String, allowed: [String], advice: (String) -> String? = { _ in nil }
    ) -> ObjectReader? {
        record(value, at: path)
        guard let members = value.objectValue else { return mismatch(value, path, "an object") }
        var known: [JSONMember] = []
        for member in members {
            let memberPath = Self.join(path, member.key)
            record(member.value, at: memberPath)
            if allowed.contains(member.key) {
                known.append(member)
            } else {
                let hint = advice(member.key).map { ": " + $0 } ?? EditDistance.hint(for: member.key, among: allowed)
                error(memberPath, "unknown key \"\(member.key)\"" + hint, at: member.keyPosition)
            }
        }
        return ObjectReader(path: path, position: value.position, members: known)
    }

    /// An array of strings; non-string elements are reported.
    mutating func strings(_ value: JSONValue, _ path: String) -> [String]? {
        guard let elements = array(value, path) else { return nil }
        var result: [String] = []
        var ok = true
        for (index, element) in elements.enumerated() {
            if let text = string(element, "\(path)[\(index)]") { result.append(text) } else { ok = false }
        }
        return ok ? result : nil
    }

    private mutating func mismatch<T>(_ value: JSONValue, _ path: String, _ expected: String) -> T? {
        error(path, "expected \(expected), found \(value.typeName)")
        return nil
    }

    static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : path + "." + key
    }
}
