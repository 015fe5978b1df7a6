// SPDX-License-Identifier: MIT

/// A parsed JSON value together with the position where it starts in the source.
///
/// Objects keep their members in source order and never contain a key twice (the parser
/// rejects duplicates). Numbers keep their literal text (see `JSONNumber`).
public struct JSONValue: Sendable, Equatable {
    public indirect enum Kind: Sendable, Equatable {
        case null
        case bool(Bool)
        case number(JSONNumber)
        case string(String)
        case array([JSONValue])
        case object([JSONMember])
    }

    public var kind: Kind
    public var position: SourcePosition

    public init(_ kind: Kind, at position: SourcePosition = SourcePosition(line: 1, column: 1)) {
        self.kind = kind
        self.position = position
    }

    /// The JSON type name used in messages: `null`, `boolean`, `number`, `string`, `array`, `object`.
    public var typeName: String {
        switch kind {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The member value for `key` when this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = kind else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var stringValue: String? {
        if case .string(let text) = kind { return text }
        return nil
    }

    public var numberValue: JSONNumber? {
        if case .number(let number) = kind { return number }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = kind { return elements }
        return nil
    }

    public var objectValue: [JSONMember]? {
        if case .object(let members) = kind { return members }
        return nil
    }
}
