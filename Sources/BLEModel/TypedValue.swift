// SPDX-License-Identifier: MIT

/// Decoding of typed values (`{"uint16": 512}`, `{"hex": "0a 0b"}`, arrays of them) into
/// the bytes they denote. See config/README.md, "Typed values".
public enum TypedValue {
    /// Every key a typed-value object may have.
    public static let kinds: [String] = ["hex", "utf8", "base64", "bytes"] + NumericType.allCases.map(\.rawValue)

    /// Decodes `json` into bytes; every issue's path starts with `path`.
    public static func decode(_ json: JSONValue, path: String) -> Result<[UInt8], ConfigurationErrors> {
        var context = DecodingContext()
        guard let bytes = context.typedValue(json, path), !context.hasErrors else {
            return .failure(ConfigurationErrors(issues: context.issues))
        }
        return .success(bytes)
    }
}
