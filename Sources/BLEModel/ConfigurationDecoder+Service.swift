// SPDX-License-Identifier: MIT

extension ConfigurationDecoder {
    /// A placeholder for a UUID that failed to decode (the nil UUID).
    static let placeholderUUID = BluetoothUUID(high: 0, low: 0)

    mutating func service(_ value: JSONValue, _ path: String) -> ServiceDefinition? {
        guard let object = context.object(value, path, allowed: Self.serviceKeys) else { return nil }
        var service = ServiceDefinition(id: identifier(object), uuid: Self.placeholderUUID, sourcePath: path)
        if let value = object.required("uuid", &context), let uuid = uuid(value, object.path("uuid")) {
            service.uuid = uuid
        }
        if let value = object["primary"], let primary = context.bool(value, object.path("primary")) {
            service.primary = primary
        }
        if let value = object["includes"], let includes = context.strings(value, object.path("includes")) {
            service.includes = includes
        }
        service.handle = handle(object)
        if let value = object["characteristics"],
            let elements = context.array(value, object.path("characteristics"))
        {
            service.characteristics = elements.enumerated().compactMap {
                characteristic($1, object.path("characteristics") + "[\($0)]")
            }
        }
        return service
    }

    mutating func characteristic(_ value: JSONValue, _ path: String) -> CharacteristicDefinition? {
        guard let object = context.object(value, path, allowed: Self.characteristicKeys) else { return nil }
        var result = CharacteristicDefinition(
            id: identifier(object), uuid: Self.placeholderUUID, flags: [], sourcePath: path)
        if let value = object.required("uuid", &context), let uuid = uuid(value, object.path("uuid")) {
            result.uuid = uuid
        }
        if let value = object.required("flags", &context) {
            result.flags = flags(value, object.path("flags"), CharacteristicFlag.self)
        }
        if let value = object["value"], let bytes = context.typedValue(value, object.path("value")) {
            result.value = bytes
            if let members = value.objectValue, members.count == 1,
                members[0].key == "utf8" || NumericType(rawValue: members[0].key) != nil
            {
                result.valueType = members[0].key
            }
        }
        result.minLength = length(object, "minLength") ?? 0
        result.maxLength = length(object, "maxLength") ?? Int(Self.maximumValueLength)
        if let value = object["persist"] { result.persist = context.bool(value, object.path("persist")) }
        if let value = object["update"] { result.update = update(value, object.path("update")) }
        if let update = result.update, let type = update.valueType { result.valueType = type }
        if let value = object["notifyIntervalMs"],
            let interval = context.integer(value, object.path("notifyIntervalMs"), in: 0...3_600_000)
        {
            result.notifyIntervalMs = Int(interval)
        }
        if let value = object["onWrite"] { result.onWrite = writeHook(value, object.path("onWrite")) }
        if let value = object["delivery"], let name = context.string(value, object.path("delivery")) {
            if let delivery = Delivery(rawValue: name) {
                result.delivery = delivery
            } else {
                let known = Delivery.allCases.map(\.rawValue)
                context.error(
                    object.path("delivery"),
                    "unknown delivery \"\(name)\" (one of \(known.joined(separator: ", ")))"
                        + EditDistance.hint(for: name, among: known))
            }
        }
        if let value = object["queueLength"],
            let length = context.integer(value, object.path("queueLength"), in: CharacteristicDefinition.queueLengthRange)
        {
            result.queueLength = Int(length)
        }
        if let value = object["handler"] { result.handler = handler(value, object.path("handler")) }
        if let value = object["acquireNotify"], let flag = context.bool(value, object.path("acquireNotify")) {
            result.acquireNotify = flag
        }
        if let value = object["acquireWrite"], let flag = context.bool(value, object.path("acquireWrite")) {
            result.acquireWrite = flag
        }
        result.handle = handle(object)
        if let value = object["descriptors"], let elements = context.array(value, object.path("descriptors")) {
            result.descriptors = elements.enumerated().compactMap {
                descriptor($1, object.path("descriptors") + "[\($0)]")
            }
        }
        return result
    }

    mutating func descriptor(_ value: JSONValue, _ path: String) -> DescriptorDefinition? {
        guard let object = context.object(value, path, allowed: Self.descriptorKeys) else { return nil }
        var result = DescriptorDefinition(id: identifier(object), uuid: Self.placeholderUUID, flags: [], sourcePath: path)
        if let value = object.required("uuid", &context), let uuid = uuid(value, object.path("uuid")) {
            result.uuid = uuid
        }
        if let value = object.required("flags", &context) {
            result.flags = flags(value, object.path("flags"), DescriptorFlag.self)
        }
        if let value = object["value"], let bytes = context.typedValue(value, object.path("value")) {
            result.value = bytes
        }
        result.minLength = length(object, "minLength") ?? 0
        result.maxLength = length(object, "maxLength") ?? Int(Self.maximumValueLength)
        result.handle = handle(object)
        return result
    }

    /// A pinned ATT handle: 1...0xFFFF, a number or a `"0x"` hex string. Whether it fits
    /// the layout is checked by `HandleLayout`.
    private mutating func handle(_ object: ObjectReader) -> UInt16? {
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

    private mutating func length(_ object: ObjectReader, _ key: String) -> Int? {
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
