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

    static let topLevelKeys = ["version", "adapter", "alias", "services", "advertisements", "security", "channels"]
    static let serviceKeys = ["id", "uuid", "primary", "includes", "characteristics", "handle"]
    static let characteristicKeys = [
        "id", "uuid", "flags", "value", "minLength", "maxLength", "descriptors", "persist", "update",
        "notifyIntervalMs", "onWrite", "delivery", "queueLength", "handler", "acquireNotify", "acquireWrite", "handle",
    ]
    static let handlerKeys = ["timeoutMs", "fallback", "error"]
    static let descriptorKeys = ["id", "uuid", "flags", "value", "minLength", "maxLength", "handle"]
    /// Longest attribute value (ATT, Core Spec Vol 3 Part F §3.2.9).
    static let maximumValueLength: Int64 = 512
    /// Longest adapter alias bluetoothd accepts (HCI local name, 248 bytes).
    static let maximumAliasLength = 248

    mutating func decode(_ root: JSONValue) -> Configuration? {
        guard let object = context.object(root, "", allowed: Self.topLevelKeys) else { return nil }
        var configuration = Configuration(services: [])
        if let value = object.required("version", &context),
            let version = context.integer(value, "version", in: Int64(Int.min)...Int64(Int.max))
        {
            if version != 1 {
                context.error("version", "unsupported version \(version) (this gattd reads version 1)")
            }
            configuration.version = Int(version)
        }
        if let value = object["adapter"], let adapter = context.string(value, "adapter") {
            if Self.isAdapterName(adapter) {
                configuration.adapter = adapter
            } else {
                context.error("adapter", "\"\(adapter)\" is not an adapter name like \"hci0\"")
            }
        }
        if let value = object["alias"], let alias = context.string(value, "alias") {
            if alias.utf8.count > Self.maximumAliasLength {
                context.error("alias", "alias is \(alias.utf8.count) bytes, longer than \(Self.maximumAliasLength)")
            }
            configuration.alias = alias
        }
        if let value = object.required("services", &context), let elements = context.array(value, "services") {
            configuration.services = elements.enumerated().compactMap { service($1, "services[\($0)]") }
        }
        if let value = object["advertisements"], let elements = context.array(value, "advertisements") {
            configuration.advertisements = elements.enumerated().compactMap { advertisement($1, "advertisements[\($0)]") }
        }
        if let value = object["security"], let security = security(value, "security") {
            configuration.security = security
        }
        if let value = object["channels"], let elements = context.array(value, "channels") {
            configuration.channels = elements.enumerated().compactMap { channel($1, "channels[\($0)]") }
        }
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
