// SPDX-License-Identifier: MIT

/// One `"key": value` pair of a JSON object, with the position of its key.
public struct JSONMember: Sendable, Equatable {
    public var key: String
    public var keyPosition: SourcePosition
    public var value: JSONValue

    public init(key: String, keyPosition: SourcePosition, value: JSONValue) {
        self.key = key
        self.keyPosition = keyPosition
        self.value = value
    }
}
