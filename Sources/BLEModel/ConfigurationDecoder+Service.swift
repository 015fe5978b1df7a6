// SPDX-License-Identifier: MIT

extension ConfigurationDecoder {
    /// A placeholder for a UUID that failed to decode (the nil UUID).
    static let placeholderUUID = BluetoothUUID(high: 0, low: 0)

    mutating func service(_ value: JSONValue, _ path: String) -> ServiceDefinition? {
        let keys = ConfigurationKeys.service
        guard let object = context.object(value, path, allowed: keys.names()) else { return nil }
        var service = ServiceDefinition(id: "", uuid: Self.placeholderUUID, sourcePath: path)
        for key in keys { key.decode(&self, object, &service) }
        return service
    }

    mutating func characteristic(_ value: JSONValue, _ path: String) -> CharacteristicDefinition? {
        let keys = ConfigurationKeys.characteristic
        guard let object = context.object(value, path, allowed: keys.names()) else { return nil }
        var characteristic = CharacteristicDefinition(id: "", uuid: Self.placeholderUUID, flags: [], sourcePath: path)
        for key in keys { key.decode(&self, object, &characteristic) }
        return characteristic
    }

    mutating func descriptor(_ value: JSONValue, _ path: String) -> DescriptorDefinition? {
        let keys = ConfigurationKeys.descriptor
        guard let object = context.object(value, path, allowed: keys.names()) else { return nil }
        var descriptor = DescriptorDefinition(id: "", uuid: Self.placeholderUUID, flags: [], sourcePath: path)
        for key in keys { key.decode(&self, object, &descriptor) }
        return descriptor
    }

    /// A pinned ATT handle: 1...0xFFFF, a number or a `"0x"` hex string. Whether it fits
    /// the layout is checked by `HandleLayout`.
    mutating func handle(_ object: ObjectReader) -> UInt16? {
        guard let value = object["handle"] else { return nil }
        return context.integerOrHexString(value, object.path("handle"), in: 1...0xFFFF).map { UInt16($0) }
    }

    /// `{"timeoutMs": 2000, "fallback": "value" | "error", "error": 128...159 or "0x80"...}`.
    mutating func handler(_ value: JSONValue, _ path: String) -> HandlerDefinition? {
        guard let object = context.object(value, path, allowed: Self.handlerKeys) else { return nil }
        var result = HandlerDefinition()
        if let value = object["timeoutMs"],
            let timeout = context.integer(value, object.path("timeoutMs"), in: HandlerDefinition.timeoutRange)
        {
            result.timeoutMs = Int(timeout)
        }
        var fallbackIsError = false
        if let value = object["fallback"], let name = context.string(value, object.path("fallback")) {
            switch name {
            case "value": break
            case "error": fallbackIsError = true
            default:
                context.error(
                    object.path("fallback"),
                    "unknown fallback \"\(name)\" (\"value\": serve the stored value; \"error\": refuse)")
            }
        }
        var code: GATTError = .unlikely
        if let value = object["error"] {
            if let number = context.integerOrHexString(value, object.path("error"), in: 0x80...0x9F) {
                code = .application(UInt8(number))
            }
            if !fallbackIsError {
                context.error(object.path("error"), "\"error\" applies only with \"fallback\": \"error\"")
            }
        }
        if fallbackIsError { result.fallback = .error(code) }
        return result
    }

    mutating func length(_ object: ObjectReader, _ key: String) -> Int? {
        guard let value = object[key] else { return nil }
        return context.integer(value, object.path(key), in: 0...Self.maximumValueLength).map { Int($0) }
    }

    /// A non-empty list of known, distinct flags; unknown and repeated ones are reported
    /// and left out.
    mutating func flags<F: RawRepresentable & CaseIterable & Equatable>(
        _ value: JSONValue, _ path: String, _: F.Type
    ) -> [F] where F.RawValue == String {
        guard let names = context.strings(value, path) else { return [] }
        if names.isEmpty { context.error(path, "flags must not be empty") }
        let known = F.allCases.map(\.rawValue)
        var result: [F] = []
        for (index, name) in names.enumerated() {
            guard let flag = F(rawValue: name) else {
                context.error("\(path)[\(index)]", "unknown flag \"\(name)\"" + EditDistance.hint(for: name, among: known))
                continue
            }
            if result.contains(flag) {
                context.error("\(path)[\(index)]", "duplicate flag \"\(name)\"")
            } else {
                result.append(flag)
            }
        }
        return result
    }
}
