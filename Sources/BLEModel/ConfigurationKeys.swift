// SPDX-License-Identifier: MIT

/// What a reload does when a key's value changed (`ConfigurationDiff`).
public enum ReloadClass: String, Sendable, CaseIterable {
    /// bluetoothd sees it in the GATT tree: the application is registered again
    /// (`treeChanges`; bluetoothd ignores `InterfacesAdded` on a registered application,
    /// docs/bluez-contract.md §1).
    case tree
    /// How a characteristic kept in the tree behaves: a new attribute database, registered
    /// again (`behaviourChanges`).
    case behaviour
    /// A configured value: applied in place to attributes nobody has written (`initialValues`).
    case initialValue
    /// Advertisements, matched by id: added, removed or changed in place (`PropertiesChanged`).
    case advertisements
    /// Read only at start (`restartOnly`).
    case restart
    /// The element's id: old and new elements are matched by it, so a changed id is one
    /// element removed and another added.
    case identity
    /// A list of child elements, each compared through its own keys (and their order).
    case children
    /// Changes nothing that is served (`version`, which is always 1).
    case nothing
}

/// One key of the service definition at one level of the file: its name, how it is
/// decoded into the level's definition, and what a reload does when it changed. The
/// tables in `ConfigurationKeys` are the only list of keys: the decoder's allowed keys, its
/// order of decoding and `ConfigurationDiff` all come from them. Keys of nested objects
/// (`update`, `onWrite`, `handler`, an advertisement's, `security`'s) belong to their
/// parent key's row and are compared as one value with it.
public struct ConfigurationKey<Definition>: Sendable {
    public let name: String
    public let reload: ReloadClass
    /// Reads the key's member into the definition (or reports it missing when required).
    let decode: @Sendable (inout ConfigurationDecoder, ObjectReader, inout Definition) -> Void
    /// Whether the key's value differs between two definitions.
    public let differs: @Sendable (Definition, Definition) -> Bool

    init(
        _ name: String, _ reload: ReloadClass,
        decode: @escaping @Sendable (inout ConfigurationDecoder, ObjectReader, inout Definition) -> Void,
        differs: @escaping @Sendable (Definition, Definition) -> Bool
    ) {
        self.name = name
        self.reload = reload
        self.decode = decode
        self.differs = differs
    }
}

extension Array {
    /// Names of the rows, in decoding order: the keys an object at this level may have.
    func names<Definition>() -> [String] where Element == ConfigurationKey<Definition> { map(\.name) }

    /// Whether any row of `reload` differs between `old` and `new`.
    func differ<Definition>(_ reload: ReloadClass, _ old: Definition, _ new: Definition) -> Bool
    where Element == ConfigurationKey<Definition> {
        contains { $0.reload == reload && $0.differs(old, new) }
    }
}

/// Every key of the service definition, one row each, per level of the file. Adding a key
/// is a row here (its decoding and its reload class), its documentation (config/README.md,
/// config/gattd.schema.json, man/gattd.json.5.scd) and a mutation in
/// `ConfigurationKeyTests`, which fails for a key whose reload class the diff does not
/// carry out.
public enum ConfigurationKeys {
    /// The top level of the file.
    public static let topLevel: [ConfigurationKey<Configuration>] = [
        ConfigurationKey("version", .nothing) { decoder, object, configuration in
            guard let value = object.required("version", &decoder.context),
                let version = decoder.context.integer(value, "version", in: Int64(Int.min)...Int64(Int.max))
            else { return }
            if version != 1 {
                decoder.context.error("version", "unsupported version \(version) (this gattd reads version 1)")
            }
            configuration.version = Int(version)
        } differs: {
            $0.version != $1.version
        },
        ConfigurationKey("adapter", .restart) { decoder, object, configuration in
            guard let value = object["adapter"], let adapter = decoder.context.string(value, "adapter") else { return }
            if ConfigurationDecoder.isAdapterName(adapter) {
                configuration.adapter = adapter
            } else {
                decoder.context.error("adapter", "\"\(adapter)\" is not an adapter name like \"hci0\"")
            }
        } differs: {
            $0.adapter != $1.adapter
        },
        ConfigurationKey("alias", .restart) { decoder, object, configuration in
            guard let value = object["alias"], let alias = decoder.context.string(value, "alias") else { return }
            let limit = ConfigurationDecoder.maximumAliasLength
            if alias.utf8.count > limit {
                decoder.context.error("alias", "alias is \(alias.utf8.count) bytes, longer than \(limit)")
            }
            configuration.alias = alias
        } differs: {
            $0.alias != $1.alias
        },
        ConfigurationKey("services", .children) { decoder, object, configuration in
            guard let value = object.required("services", &decoder.context),
                let elements = decoder.context.array(value, "services")
            else { return }
            configuration.services = elements.enumerated().compactMap { decoder.service($1, "services[\($0)]") }
        } differs: {
            $0.services.map(\.id) != $1.services.map(\.id)
        },
        ConfigurationKey("advertisements", .advertisements) { decoder, object, configuration in
            guard let value = object["advertisements"], let elements = decoder.context.array(value, "advertisements")
            else { return }
            configuration.advertisements = elements.enumerated().compactMap {
                decoder.advertisement($1, "advertisements[\($0)]")
            }
        } differs: {
            $0.advertisements != $1.advertisements
        },
        ConfigurationKey("security", .restart) { decoder, object, configuration in
            if let value = object["security"], let security = decoder.security(value, "security") {
                configuration.security = security
            }
        } differs: {
            $0.security != $1.security
        },
        // The listeners are opened at start (docs/channels.md): a changed channel waits for
        // a restart. Where a channel sits in the file (`sourcePath`) is not a change.
        ConfigurationKey("channels", .restart) { decoder, object, configuration in
            guard let value = object["channels"], let elements = decoder.context.array(value, "channels") else { return }
            configuration.channels = elements.enumerated().compactMap { decoder.channel($1, "channels[\($0)]") }
        } differs: {
            let placed = { (channels: [ChannelDefinition]) in
                channels.map { channel -> ChannelDefinition in
                    var copy = channel
                    copy.sourcePath = ""
                    return copy
                }
            }
            return placed($0.channels) != placed($1.channels)
        }
    ]

    /// A service (`services[i]`).
    public static let service: [ConfigurationKey<ServiceDefinition>] = [
        ConfigurationKey("id", .identity) { decoder, object, service in
            service.id = decoder.identifier(object)
        } differs: {
            $0.id != $1.id
        },
        ConfigurationKey("uuid", .tree) { decoder, object, service in
            if let value = object.required("uuid", &decoder.context),
                let uuid = decoder.uuid(value, object.path("uuid"))
            {
                service.uuid = uuid
            }
        } differs: {
            $0.uuid != $1.uuid
        },
        ConfigurationKey("primary", .tree) { decoder, object, service in
            if let value = object["primary"], let primary = decoder.context.bool(value, object.path("primary")) {
                service.primary = primary
            }
        } differs: {
            $0.primary != $1.primary
        },
        ConfigurationKey("includes", .tree) { decoder, object, service in
            if let value = object["includes"], let includes = decoder.context.strings(value, object.path("includes")) {
                service.includes = includes
            }
        } differs: {
            $0.includes != $1.includes
        },
        ConfigurationKey("handle", .tree) { decoder, object, service in
            service.handle = decoder.handle(object)
        } differs: {
            $0.handle != $1.handle
        },
        ConfigurationKey("characteristics", .children) { decoder, object, service in
            guard let value = object["characteristics"],
                let elements = decoder.context.array(value, object.path("characteristics"))
            else { return }
            service.characteristics = elements.enumerated().compactMap {
                decoder.characteristic($1, object.path("characteristics") + "[\($0)]")
            }
        } differs: {
            $0.characteristics.map(\.id) != $1.characteristics.map(\.id)
        }
    ]

    /// A characteristic (`services[i].characteristics[j]`).
    public static let characteristic: [ConfigurationKey<CharacteristicDefinition>] = [
        ConfigurationKey("id", .identity) { decoder, object, characteristic in
            characteristic.id = decoder.identifier(object)
        } differs: {
            $0.id != $1.id
        },
        ConfigurationKey("uuid", .tree) { decoder, object, characteristic in
            if let value = object.required("uuid", &decoder.context),
                let uuid = decoder.uuid(value, object.path("uuid"))
            {
                characteristic.uuid = uuid
            }
        } differs: {
            $0.uuid != $1.uuid
        },
        ConfigurationKey("flags", .tree) { decoder, object, characteristic in
            if let value = object.required("flags", &decoder.context) {
                characteristic.flags = decoder.flags(value, object.path("flags"), CharacteristicFlag.self)
            }
        } differs: {
            $0.flags != $1.flags
        },
        ConfigurationKey("value", .initialValue) { decoder, object, characteristic in
            guard let value = object["value"], let bytes = decoder.context.typedValue(value, object.path("value"))
            else { return }
            characteristic.value = bytes
            if let members = value.objectValue, members.count == 1,
                members[0].key == "utf8" || NumericType(rawValue: members[0].key) != nil
            {
                characteristic.valueType = members[0].key
            }
        } differs: {
            $0.value != $1.value
        },
        ConfigurationKey("minLength", .tree) { decoder, object, characteristic in
            characteristic.minLength = decoder.length(object, "minLength") ?? 0
        } differs: {
            $0.minLength != $1.minLength
        },
        ConfigurationKey("maxLength", .tree) { decoder, object, characteristic in
            characteristic.maxLength =
                decoder.length(object, "maxLength") ?? Int(ConfigurationDecoder.maximumValueLength)
        } differs: {
            $0.maxLength != $1.maxLength
        },
        ConfigurationKey("persist", .behaviour) { decoder, object, characteristic in
            if let value = object["persist"] {
                characteristic.persist = decoder.context.bool(value, object.path("persist"))
            }
        } differs: {
            $0.persist != $1.persist
        },
        ConfigurationKey("update", .behaviour) { decoder, object, characteristic in
            if let value = object["update"] { characteristic.update = decoder.update(value, object.path("update")) }
            if let type = characteristic.update?.valueType { characteristic.valueType = type }
        } differs: {
            $0.update != $1.update
        },
        ConfigurationKey("notifyIntervalMs", .behaviour) { decoder, object, characteristic in
            if let value = object["notifyIntervalMs"],
                let interval = decoder.context.integer(value, object.path("notifyIntervalMs"), in: 0...3_600_000)
            {
                characteristic.notifyIntervalMs = Int(interval)
            }
        } differs: {
            $0.notifyIntervalMs != $1.notifyIntervalMs
        },
        ConfigurationKey("onWrite", .behaviour) { decoder, object, characteristic in
            if let value = object["onWrite"] {
                characteristic.onWrite = decoder.writeHook(value, object.path("onWrite"))
            }
        } differs: {
            $0.onWrite != $1.onWrite
        },
        ConfigurationKey("delivery", .behaviour) { decoder, object, characteristic in
            guard let value = object["delivery"], let name = decoder.context.string(value, object.path("delivery"))
            else { return }
            if let delivery = Delivery(rawValue: name) {
                characteristic.delivery = delivery
            } else {
                let known = Delivery.allCases.map(\.rawValue)
                decoder.context.error(
                    object.path("delivery"),
                    "unknown delivery \"\(name)\" (one of \(known.joined(separator: ", ")))"
                        + EditDistance.hint(for: name, among: known))
            }
        } differs: {
            $0.delivery != $1.delivery
        },
        ConfigurationKey("queueLength", .behaviour) { decoder, object, characteristic in
            if let value = object["queueLength"],
                let length = decoder.context.integer(
                    value, object.path("queueLength"), in: CharacteristicDefinition.queueLengthRange)
            {
                characteristic.queueLength = Int(length)
            }
        } differs: {
            $0.queueLength != $1.queueLength
        },
        ConfigurationKey("handler", .behaviour) { decoder, object, characteristic in
            if let value = object["handler"] { characteristic.handler = decoder.handler(value, object.path("handler")) }
        } differs: {
            $0.handler != $1.handler
        },
        ConfigurationKey("acquireNotify", .tree) { decoder, object, characteristic in
            if let value = object["acquireNotify"], let flag = decoder.context.bool(value, object.path("acquireNotify"))
            {
                characteristic.acquireNotify = flag
            }
        } differs: {
            $0.acquireNotify != $1.acquireNotify
        },
        ConfigurationKey("acquireWrite", .tree) { decoder, object, characteristic in
            if let value = object["acquireWrite"], let flag = decoder.context.bool(value, object.path("acquireWrite")) {
                characteristic.acquireWrite = flag
            }
        } differs: {
            $0.acquireWrite != $1.acquireWrite
        },
        ConfigurationKey("accept", .behaviour) { decoder, object, characteristic in
            guard let value = object["accept"] else { return }
            // A `value` that did not decode was reported there: its type is not missing.
            let typeKnown = object["value"] == nil || !decoder.context.failed(object.path("value"))
            characteristic.accept = decoder.accept(
                value, object.path("accept"), type: characteristic.valueType, typeKnown: typeKnown)
        } differs: {
            $0.accept != $1.accept
        },
        ConfigurationKey("handle", .tree) { decoder, object, characteristic in
            characteristic.handle = decoder.handle(object)
        } differs: {
            $0.handle != $1.handle
        },
        ConfigurationKey("descriptors", .children) { decoder, object, characteristic in
            guard let value = object["descriptors"],
                let elements = decoder.context.array(value, object.path("descriptors"))
            else { return }
            characteristic.descriptors = elements.enumerated().compactMap {
                decoder.descriptor($1, object.path("descriptors") + "[\($0)]")
            }
        } differs: {
            $0.descriptors.map(\.id) != $1.descriptors.map(\.id)
        }
    ]

    /// A descriptor (`...characteristics[j].descriptors[k]`).
    public static let descriptor: [ConfigurationKey<DescriptorDefinition>] = [
        ConfigurationKey("id", .identity) { decoder, object, descriptor in
            descriptor.id = decoder.identifier(object)
        } differs: {
            $0.id != $1.id
        },
        ConfigurationKey("uuid", .tree) { decoder, object, descriptor in
            if let value = object.required("uuid", &decoder.context),
                let uuid = decoder.uuid(value, object.path("uuid"))
            {
                descriptor.uuid = uuid
            }
        } differs: {
            $0.uuid != $1.uuid
        },
        ConfigurationKey("flags", .tree) { decoder, object, descriptor in
            if let value = object.required("flags", &decoder.context) {
                descriptor.flags = decoder.flags(value, object.path("flags"), DescriptorFlag.self)
            }
        } differs: {
            $0.flags != $1.flags
        },
        ConfigurationKey("value", .initialValue) { decoder, object, descriptor in
            if let value = object["value"], let bytes = decoder.context.typedValue(value, object.path("value")) {
                descriptor.value = bytes
            }
        } differs: {
            $0.value != $1.value
        },
        ConfigurationKey("minLength", .tree) { decoder, object, descriptor in
            descriptor.minLength = decoder.length(object, "minLength") ?? 0
        } differs: {
            $0.minLength != $1.minLength
        },
        ConfigurationKey("maxLength", .tree) { decoder, object, descriptor in
            descriptor.maxLength = decoder.length(object, "maxLength") ?? Int(ConfigurationDecoder.maximumValueLength)
        } differs: {
            $0.maxLength != $1.maxLength
        },
        ConfigurationKey("handle", .tree) { decoder, object, descriptor in
            descriptor.handle = decoder.handle(object)
        } differs: {
            $0.handle != $1.handle
        }
    ]
}
