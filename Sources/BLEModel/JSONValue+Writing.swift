// SPDX-License-Identifier: MIT

/// Writing JSON: the one writer (`canonicalText`) and the values to write. gattd writes
/// JSON without Foundation: `gattctl --json`, `gattd --doctor --json` and the canonical form
/// of an advertisement's definition build a `JSONValue` (members in the order given) and
/// write it here. The state file is laid out by hand for its one-entry-per-line layout
/// (`StateDocument.encoded`), with the same string quoting (`jsonQuoted`).
extension JSONValue {
    /// Compact JSON text of the value, members in their order, no spaces; numbers as
    /// written (a parsed number keeps its literal).
    public var canonicalText: String {
        switch kind {
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .number(let number): number.literal
        case .string(let text): jsonQuoted(text)
        case .array(let elements): "[" + elements.map(\.canonicalText).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.map { jsonQuoted($0.key) + ":" + $0.value.canonicalText }.joined(separator: ",") + "}"
        }
    }

    public static let null = JSONValue(.null)

    public static func bool(_ flag: Bool) -> JSONValue { JSONValue(.bool(flag)) }

    public static func string(_ text: String) -> JSONValue { JSONValue(.string(text)) }

    public static func number(_ number: Int) -> JSONValue { JSONValue(.number(JSONNumber(literal: String(number)))) }

    public static func array(_ elements: [JSONValue]) -> JSONValue { JSONValue(.array(elements)) }

    /// An object with `members` in this order (keys are not checked for repeats).
    public static func object(_ members: [(String, JSONValue)]) -> JSONValue {
        let start = SourcePosition(line: 1, column: 1)
        return JSONValue(.object(members.map { JSONMember(key: $0.0, keyPosition: start, value: $0.1) }))
    }

    /// `null` for nil.
    public static func optional(_ text: String?) -> JSONValue { text.map(string) ?? .null }
    /// `null` for nil.
    public static func optional(_ number: Int?) -> JSONValue { number.map(JSONValue.number) ?? .null }
    /// `null` for nil.
    public static func optional(_ flag: Bool?) -> JSONValue { flag.map(bool) ?? .null }
    /// `null` for nil, else an array of strings.
    public static func optional(_ texts: [String]?) -> JSONValue { texts.map { .array($0.map(string)) } ?? .null }
}
