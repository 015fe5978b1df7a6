// SPDX-License-Identifier: MIT

/// The known members of one JSON object being decoded, with its path.
struct ObjectReader {
    let path: String
    let position: SourcePosition
    let members: [JSONMember]

    subscript(key: String) -> JSONValue? {
        members.first { $0.key == key }?.value
    }

    func path(_ key: String) -> String {
        DecodingContext.join(path, key)
    }

    /// The member for `key`; reports `missing required key "key"` on the object when absent.
    func required(_ key: String, _ context: inout DecodingContext) -> JSONValue? {
        if let value = self[key] { return value }
        context.error(path, "missing required key \"\(key)\"", at: position)
        return nil
    }
}
