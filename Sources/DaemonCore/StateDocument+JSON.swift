// SPDX-License-Identifier: MIT

internal import BLEModel

extension StateDocument {
    /// The document as UTF-8 JSON: keys in a fixed order, ids sorted, values as lowercase
    /// hex, one entry per line, a trailing newline. The same document always gives the
    /// same bytes.
    public func encoded() -> [UInt8] {
        var out = "{\n  \"version\": \(version),\n"
        out += "  \"characteristics\": " + Self.encodeValues(characteristics) + ",\n"
        out += "  \"descriptors\": " + Self.encodeValues(descriptors) + ",\n"
        out += "  \"sources\": "
            + Self.encodeObject(sources) { "{\"counter\": \($0.counter)}" } + ",\n"
        out += "  \"advertisements\": "
            + Self.encodeObject(advertisements) { "{\"enabled\": \($0 ? "true" : "false")}" }
        if !advertisementData.isEmpty {
            out += ",\n  \"advertisementData\": " + Self.encodeObject(advertisementData) { jsonQuoted($0) }
        }
        if !handles.isEmpty {
            out += ",\n  \"handles\": {\n"
            let sections = [
                ("services", handles.services), ("characteristics", handles.characteristics),
                ("descriptors", handles.descriptors),
            ]
            out += sections.map { name, entries in
                "    \"\(name)\": " + Self.encodeObject(entries, indent: "      ", closing: "    ") { "\($0)" }
            }.joined(separator: ",\n")
            out += "\n  }"
        }
        out += "\n}\n"
        return Array(out.utf8)
    }

    /// Reads a state file.
    /// - Throws: `StateDecodingError` naming the JSON path at fault; `.futureVersion` when
    ///   `version` is newer than this build reads.
    public init(decoding bytes: [UInt8]) throws(StateDecodingError) {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            throw StateDecodingError(.syntax, path: "", message: error.description)
        }
        let top = try StateShape.object(root, path: "")
        guard let versionValue = root["version"] else {
            throw StateDecodingError(.shape, path: "version", message: "missing")
        }
        let version = try StateShape.integer(versionValue, path: "version")
        if version > Int64(Self.currentVersion) {
            throw StateDecodingError(
                .futureVersion(version), path: "version",
                message: "version \(version) is newer than this gattd reads (\(Self.currentVersion))")
        }
        guard version >= 1 else {
            throw StateDecodingError(.shape, path: "version", message: "unsupported version \(version)")
        }
        var keys: Set<String> = ["version", "characteristics", "descriptors", "sources", "advertisements"]
        if version >= 2 { keys.insert("advertisementData") }
        if version >= 3 { keys.insert("handles") }
        try StateShape.onlyKeys(top, keys, path: "")
        self.init()
        characteristics = try Self.decodeValues(root["characteristics"], path: "characteristics")
        descriptors = try Self.decodeValues(root["descriptors"], path: "descriptors")
        sources = try StateShape.entries(root["sources"], path: "sources") { value, path throws(StateDecodingError) in
            let members = try StateShape.object(value, path: path)
            try StateShape.onlyKeys(members, ["counter"], path: path)
            return SavedSource(counter: try StateShape.integer(StateShape.required(value, "counter", path), path: path + ".counter"))
        }
        advertisements = try StateShape.entries(root["advertisements"], path: "advertisements") {
            value, path throws(StateDecodingError) in
            let members = try StateShape.object(value, path: path)
            try StateShape.onlyKeys(members, ["enabled"], path: path)
            let enabled = try StateShape.required(value, "enabled", path)
            guard case .bool(let flag) = enabled.kind else {
                throw StateDecodingError(.shape, path: path + ".enabled", message: "expected a boolean, found \(enabled.typeName)")
            }
            return flag
        }
        advertisementData = try StateShape.entries(root["advertisementData"], path: "advertisementData") {
            value, path throws(StateDecodingError) in
            try StateShape.string(value, path: path)
        }
        do {
            handles = try Self.decodeHandles(root["handles"])
        } catch {
            discardedHandles = error
        }
    }

    /// `{"services": {id: handle}, "characteristics": {...}, "descriptors": {...}}`, each
    /// handle 1...0xFFFF.
    private static func decodeHandles(_ value: JSONValue?) throws(StateDecodingError) -> AttributeHandles {
        guard let value else { return AttributeHandles() }
        let members = try StateShape.object(value, path: "handles")
        try StateShape.onlyKeys(members, ["services", "characteristics", "descriptors"], path: "handles")
        func section(_ name: String) throws(StateDecodingError) -> [String: UInt16] {
            try StateShape.entries(value[name], path: "handles." + name) { entry, path throws(StateDecodingError) in
                let number = try StateShape.integer(entry, path: path)
                guard (1...0xFFFF).contains(number) else {
                    throw StateDecodingError(.shape, path: path, message: "handle \(number) is outside 1...65535")
                }
                return UInt16(number)
            }
        }
        return AttributeHandles(
            services: try section("services"), characteristics: try section("characteristics"),
            descriptors: try section("descriptors"))
    }

    private static func decodeValues(_ value: JSONValue?, path: String) throws(StateDecodingError) -> [String: SavedValue] {
        try StateShape.entries(value, path: path) { entry, path throws(StateDecodingError) in
            let members = try StateShape.object(entry, path: path)
            try StateShape.onlyKeys(members, ["uuid", "value", "minLength", "maxLength"], path: path)
            let uuidText = try StateShape.string(StateShape.required(entry, "uuid", path), path: path + ".uuid")
            guard let uuid = BluetoothUUID(uuidText) else {
                throw StateDecodingError(.shape, path: path + ".uuid", message: "invalid UUID \"\(uuidText)\"")
            }
            let hex = try StateShape.string(StateShape.required(entry, "value", path), path: path + ".value")
            let bytes = try StateShape.hexBytes(hex, path: path + ".value")
            let minLength = try StateShape.length(StateShape.required(entry, "minLength", path), path: path + ".minLength")
            let maxLength = try StateShape.length(StateShape.required(entry, "maxLength", path), path: path + ".maxLength")
            return SavedValue(uuid: uuid, value: bytes, minLength: minLength, maxLength: maxLength)
        }
    }

    private static func encodeValues(_ values: [String: SavedValue]) -> String {
        encodeObject(values) { saved in
            "{\"uuid\": \"\(saved.uuid)\", \"value\": \"\(lowercaseHex(saved.value))\", "
                + "\"minLength\": \(saved.minLength), \"maxLength\": \(saved.maxLength)}"
        }
    }

    private static func encodeObject<Entry>(
        _ entries: [String: Entry], indent: String = "    ", closing: String = "  ", _ encode: (Entry) -> String
    ) -> String {
        guard !entries.isEmpty else { return "{}" }
        let lines = entries.keys.sorted().map { key in
            indent + jsonQuoted(key) + ": " + encode(entries[key]!)
        }
        return "{\n" + lines.joined(separator: ",\n") + "\n" + closing + "}"
    }
}

