// SPDX-License-Identifier: MIT

extension ConfigurationDecoder {
    static let advertisementKeys = [
        "id", "type", "localName", "serviceUUIDs", "solicitUUIDs", "manufacturerData", "serviceData", "data",
        "appearance", "includes", "discoverable", "discoverableTimeout", "duration", "timeout", "minInterval",
        "maxInterval", "txPower", "secondaryChannel", "enabled", "readvertiseAfterDisconnect",
    ]
    /// `MinInterval`/`MaxInterval` bounds in ms (BlueZ: 20 ms to 10485.759 s).
    static let intervalRange: ClosedRange<Int64> = 20...10_485_759

    mutating func advertisement(_ value: JSONValue, _ path: String) -> AdvertisementDefinition? {
        guard let object = context.object(value, path, allowed: Self.advertisementKeys) else { return nil }
        var result = AdvertisementDefinition(id: identifier(object), sourcePath: path)
        if let value = object["type"], let type = choice(value, object.path("type"), AdvertisementDefinition.Kind.self) {
            result.type = type
        }
        result.discoverable = result.type == .peripheral
        if let value = object["localName"] { result.localName = context.string(value, object.path("localName")) }
        if let value = object["serviceUUIDs"] { result.serviceUUIDs = uuids(value, object.path("serviceUUIDs")) }
        if let value = object["solicitUUIDs"] { result.solicitUUIDs = uuids(value, object.path("solicitUUIDs")) }
        if let value = object["manufacturerData"] {
            result.manufacturerData = keyedValues(value, object.path("manufacturerData")) { decoder, key, keyPath in
                decoder.context.integerText(key, keyPath, in: 0...0xFFFF).map { UInt16($0) }
            }.map { (companyID: $0.key, value: $0.value) }
        }
        if let value = object["serviceData"] {
            result.serviceData = keyedValues(value, object.path("serviceData")) { decoder, key, keyPath in
                decoder.uuid(JSONValue(.string(key), at: decoder.context.position(of: keyPath) ?? value.position), keyPath)
            }.map { (uuid: $0.key, value: $0.value) }
        }
        if let value = object["data"] {
            result.data = keyedValues(value, object.path("data")) { decoder, key, keyPath in
                decoder.context.integerText(key, keyPath, in: 0...0xFF).map { UInt8($0) }
            }.map { (type: $0.key, value: $0.value) }
        }
        if let value = object["appearance"] {
            result.appearance = context.integerOrHexString(value, object.path("appearance"), in: 0...0xFFFF).map {
                UInt16($0)
            }
        }
        if let value = object["includes"] { result.includes = includes(value, object.path("includes")) }
        if let value = object["discoverable"], let flag = context.bool(value, object.path("discoverable")) {
            result.discoverable = flag
        }
        result.discoverableTimeout = seconds(object, "discoverableTimeout")
        result.duration = seconds(object, "duration")
        result.timeout = seconds(object, "timeout")
        result.minInterval = interval(object, "minInterval")
        result.maxInterval = interval(object, "maxInterval")
        if let value = object["txPower"] {
            result.txPower = context.integer(value, object.path("txPower"), in: -127...20).map { Int16($0) }
        }
        if let value = object["secondaryChannel"] {
            result.secondaryChannel = choice(
                value, object.path("secondaryChannel"), AdvertisementDefinition.SecondaryChannel.self)
        }
        if let value = object["enabled"], let flag = context.bool(value, object.path("enabled")) {
            result.enabled = flag
        }
        if let value = object["readvertiseAfterDisconnect"],
            let flag = context.bool(value, object.path("readvertiseAfterDisconnect"))
        {
            result.readvertiseAfterDisconnect = flag
        }
        return result
    }

    private mutating func uuids(_ value: JSONValue, _ path: String) -> [BluetoothUUID] {
        guard let elements = context.array(value, path) else { return [] }
        return elements.enumerated().compactMap { uuid($1, "\(path)[\($0)]") }
    }

    /// An object whose keys name something (company id, UUID, AD type) and whose values
    /// are typed values; keys are parsed by `key`.
    private mutating func keyedValues<Key>(
        _ value: JSONValue, _ path: String, key parse: (inout ConfigurationDecoder, String, String) -> Key?
    ) -> [(key: Key, value: [UInt8])] {
        context.record(value, at: path)
        guard let members = value.objectValue else {
            context.error(path, "expected an object, found \(value.typeName)")
            return []
        }
        var result: [(key: Key, value: [UInt8])] = []
        for member in members {
            let memberPath = DecodingContext.join(path, member.key)
            context.record(member.value, at: memberPath)
            let key = parse(&self, member.key, memberPath)
            let bytes = context.typedValue(member.value, memberPath)
            if let key, let bytes { result.append((key: key, value: bytes)) }
        }
        return result
    }

    private mutating func includes(_ value: JSONValue, _ path: String) -> [AdvertisementDefinition.Include] {
        guard let elements = context.array(value, path) else { return [] }
        var result: [AdvertisementDefinition.Include] = []
        for (index, element) in elements.enumerated() {
            let elementPath = "\(path)[\(index)]"
            guard let include = choice(element, elementPath, AdvertisementDefinition.Include.self) else { continue }
            if result.contains(include) {
                context.error(elementPath, "duplicate include \"\(include.rawValue)\"")
            } else {
                result.append(include)
            }
        }
        return result
    }

    private mutating func seconds(_ object: ObjectReader, _ key: String) -> UInt16? {
        guard let value = object[key] else { return nil }
        return context.integer(value, object.path(key), in: 0...0xFFFF).map { UInt16($0) }
    }

    private mutating func interval(_ object: ObjectReader, _ key: String) -> UInt32? {
        guard let value = object[key] else { return nil }
        return context.integer(value, object.path(key), in: Self.intervalRange).map { UInt32($0) }
    }
}
