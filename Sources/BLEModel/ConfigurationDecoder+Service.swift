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
        guard let object = context.object(value, path, allowed: keys.names(), advice: Self.characteristicKeyAdvice)
        else { return nil }
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

    /// `{"min": 10, "max": 30, "error": "0x81"}` or `{"oneOf": [0, 1, 2]}`, numbers of the
    /// characteristic's number type `type` (from its `value` or its `update`'s encoding).
    /// `typeKnown` false: the value did not decode (reported there), so no type is missing.
    mutating func accept(_ value: JSONValue, _ path: String, type: String?, typeKnown: Bool) -> AcceptRule? {
        guard let object = context.object(value, path, allowed: Self.acceptKeys) else { return nil }
        var error = AcceptRule.defaultError
        if let value = object["error"], let code = context.integerOrHexString(value, object.path("error"), in: 0...255) {
            if let application = GATTError(attCode: UInt8(code)), case .application = application {
                error = application
            } else {
                context.error(
                    object.path("error"),
                    "ATT error 0x\(String(code, radix: 16)) cannot be sent by gattd: bluetoothd passes on only the "
                        + "application errors 0x80...0x9F from a program (and turns 0x13 Value Not Allowed or "
                        + "0xFF Out of Range into 0x0E); use one of 0x80...0x9F")
            }
        }
        guard let name = type, let numeric = NumericType(rawValue: name) else {
            if typeKnown {
                let found = type.map { "\"\($0)\"" } ?? "bytes without a type"
                context.error(
                    path,
                    "accept needs the characteristic's value as one number type, e.g. \"value\": {\"uint8\": 20} "
                        + "(found \(found)); for other values use an \"onWrite\" hook with \"decides\": true or a handler")
            }
            return nil
        }
        let range = [object["min"], object["max"]]
        let minimum = object["min"].flatMap { acceptNumber($0, object.path("min"), numeric) }
        let maximum = object["max"].flatMap { acceptNumber($0, object.path("max"), numeric) }
        if let list = object["oneOf"] {
            if range.contains(where: { $0 != nil }) {
                context.error(path, "\"oneOf\" and \"min\"/\"max\" are exclusive: give a list or a range")
                return nil
            }
            guard let elements = context.array(list, object.path("oneOf")) else { return nil }
            if elements.isEmpty {
                context.error(object.path("oneOf"), "oneOf must name at least one value")
                return nil
            }
            var numbers: [AcceptRule.Number] = []
            for (index, element) in elements.enumerated() {
                guard let number = acceptNumber(element, object.path("oneOf") + "[\(index)]", numeric) else { return nil }
                numbers.append(number)
            }
            return AcceptRule(type: numeric, condition: .oneOf(numbers), error: error)
        }
        guard range.contains(where: { $0 != nil }) else {
            context.error(path, "accept needs \"min\", \"max\" (or both) or \"oneOf\"", at: object.position)
            return nil
        }
        if object["min"] != nil && minimum == nil || object["max"] != nil && maximum == nil { return nil }
        if let minimum, let maximum, maximum.isLess(than: minimum) {
            context.error(object.path("min"), "min \(minimum) is greater than max \(maximum)")
            return nil
        }
        return AcceptRule(type: numeric, condition: .range(min: minimum, max: maximum), error: error)
    }

    /// A JSON number that `type` encodes (the same check as a typed value's), as the number
    /// the encoded bytes hold (float32 and SFLOAT round as on air).
    private mutating func acceptNumber(_ value: JSONValue, _ path: String, _ type: NumericType) -> AcceptRule.Number? {
        context.record(value, at: path)
        guard let number = value.numberValue else {
            context.error(path, "expected a number (the characteristic's value is \(type.rawValue)), found \(value.typeName)")
            return nil
        }
        do throws(ValueEncodingError) {
            guard let result = type.number(try type.encode(number)) else {
                context.error(path, "\(number) is not a number a \(type.rawValue) value can compare with")
                return nil
            }
            return result
        } catch {
            context.error(path, "\(error.message) (the characteristic's value is \(type.rawValue))")
            return nil
        }
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
