// SPDX-License-Identifier: MIT

/// Turns a parsed JSON document into a `Configuration`, checking keys, types and ranges.
///
/// Cross-field rules live in `Configuration+Validation.swift`. Elements that had decoding
/// errors are still returned (with placeholder values) so that paths stay right and id
/// rules still run; each rule runs when the fields it reads decoded
/// (`DecodingContext.intact`).
struct ConfigurationDecoder {
    var context = DecodingContext()
    /// `sourcePath`s of elements whose `id` key was absent (ids to derive).
    private(set) var absentIDs: Set<String> = []

    static let acceptKeys = ["min", "max", "oneOf", "error"]
    /// Keys a user writes on a characteristic meaning a rule for its values: pointed to
    /// `accept` (and to hooks and handlers for anything more) instead of a look-alike key.
    static let ruleWords: Set<String> = [
        "min", "max", "minimum", "maximum", "range", "minvalue", "maxvalue", "allowed", "values", "enum", "oneof",
        "validate", "validation", "rule", "rules", "constraint", "limits",
    ]
    static func characteristicKeyAdvice(_ key: String) -> String? {
        guard ruleWords.contains(key.lowercased()) else { return nil }
        return "the values a central may write are given by \"accept\", e.g. \"accept\": {\"min\": 10, \"max\": 30} "
            + "or {\"oneOf\": [0, 1, 2]} for a number-typed \"value\" (config/README.md, \"Accept rules\"); "
            + "for any other rule, an \"onWrite\" hook with \"decides\": true or a program's handler"
    }
    static let handlerKeys = ["timeoutMs", "fallback", "error"]
    static let descriptorKeys = ["id", "uuid", "flags", "value", "minLength", "maxLength", "handle"]
    /// Longest attribute value (ATT, Core Spec Vol 3 Part F §3.2.9).
    static let maximumValueLength: Int64 = 512
    /// Longest adapter alias bluetoothd accepts (HCI local name, 248 bytes).
    static let maximumAliasLength = 248

    mutating func decode(_ root: JSONValue) -> Configuration? {
        let keys = ConfigurationKeys.topLevel
        guard let object = context.object(root, "", allowed: keys.names()) else { return nil }
        var configuration = Configuration(services: [])
        for key in keys { key.decode(&self, object, &configuration) }
        return configuration
    }

    static func isAdapterName(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count > 3, bytes.count <= 6, text.hasPrefix("hci") else { return false }
        return bytes[3...].allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    // MARK: - Shared pieces

    /// Reads the optional `id`; absence is recorded for derivation.
    mutating func identifier(_ object: ObjectReader) -> String {
        guard let value = object["id"] else {
            absentIDs.insert(object.path)
            return ""
        }
        return context.string(value, object.path("id")) ?? ""
    }

    mutating func uuid(_ value: JSONValue, _ path: String) -> BluetoothUUID? {
        guard let text = context.string(value, path) else { return nil }
        guard let uuid = BluetoothUUID(text) else {
            context.error(
                path,
                "invalid UUID \"\(text)\" (expected 16-bit \"180D\", 32-bit \"0000180D\" or 128-bit "
                    + "\"0000180d-0000-1000-8000-00805f9b34fb\" form)")
            return nil
        }
        return uuid
    }

    /// One of `E`'s raw values, with a suggestion when misspelt.
    mutating func choice<E: RawRepresentable & CaseIterable>(
        _ value: JSONValue, _ path: String, _: E.Type
    ) -> E? where E.RawValue == String {
        guard let text = context.string(value, path) else { return nil }
        if let result = E(rawValue: text) { return result }
        let names = E.allCases.map(\.rawValue)
        context.error(
            path,
            "\"\(text)\" is not one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
                + EditDistance.hint(for: text, among: names))
        return nil
    }

}
