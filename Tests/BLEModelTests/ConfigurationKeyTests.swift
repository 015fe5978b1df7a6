// SPDX-License-Identifier: MIT

import BLEModel
import Testing

/// The key tables (`ConfigurationKeys`) are the one list of the definition's keys: these
/// tests fail when a field of a definition has no key (so no reload class), when a key has
/// no mutation here, and when a reload does not do with a changed key what its row says.
@Suite("Configuration keys: one row each, every one classified")
struct ConfigurationKeyTests {
    static let uuid = BluetoothUUID("12345678-1234-5678-1234-56789abc0001")!
    static let otherUUID = BluetoothUUID("12345678-1234-5678-1234-56789abc0002")!

    static let descriptor = DescriptorDefinition(
        id: "label-desc", uuid: BluetoothUUID("2901")!, flags: [.read], value: Array("Label".utf8))
    static let characteristic = CharacteristicDefinition(
        id: "label", uuid: uuid, flags: [.read, .write, .notify], value: [1], descriptors: [descriptor])
    static let service = ServiceDefinition(
        id: "svc", uuid: BluetoothUUID("12345678-1234-5678-1234-56789abc0000")!, characteristics: [characteristic])
    static let base = Configuration(
        adapter: "hci0", services: [service], advertisements: [AdvertisementDefinition(id: "main", localName: "gattd")])

    // Per key: the reload class it must keep and one change of it. A key added to a table
    // needs its line here; a key moved to another class is a change of what a reload does.
    static let topLevelChanges: [String: (ReloadClass, @Sendable (inout Configuration) -> Void)] = [
        "version": (.nothing, { $0.version = 2 }),
        "adapter": (.restart, { $0.adapter = "hci1" }),
        "alias": (.restart, { $0.alias = "other" }),
        "services": (.children, { $0.services.append(ServiceDefinition(id: "second", uuid: otherUUID)) }),
        "advertisements": (.advertisements, { $0.advertisements[0].localName = "renamed" }),
        "security": (.restart, { $0.security.bondedOnly = true }),
        "channels": (.restart, { $0.channels.append(ChannelDefinition(id: "files", service: "svc")) })
    ]
    static let serviceChanges: [String: (ReloadClass, @Sendable (inout ServiceDefinition) -> Void)] = [
        "id": (.identity, { $0.id = "renamed" }),
        "uuid": (.tree, { $0.uuid = otherUUID }),
        "primary": (.tree, { $0.primary = false }),
        "includes": (.tree, { $0.includes = ["other"] }),
        "handle": (.tree, { $0.handle = 0x20 }),
        "characteristics": (
            .children,
            { $0.characteristics.append(CharacteristicDefinition(id: "second", uuid: otherUUID, flags: [.read])) }
        )
    ]
    static let characteristicChanges: [String: (ReloadClass, @Sendable (inout CharacteristicDefinition) -> Void)] = [
        "id": (.identity, { $0.id = "renamed" }),
        "uuid": (.tree, { $0.uuid = otherUUID }),
        "flags": (.tree, { $0.flags.append(.indicate) }),
        "value": (.initialValue, { $0.value = [2] }),
        "minLength": (.tree, { $0.minLength = 1 }),
        "maxLength": (.tree, { $0.maxLength = 100 }),
        "persist": (.behaviour, { $0.persist = true }),
        "update": (
            .behaviour,
            {
                $0.update = UpdateDefinition(
                    everyMs: 1000, source: .counter(start: 0, step: 1, min: 0, max: 9), encode: nil)
            }
        ),
        "notifyIntervalMs": (.behaviour, { $0.notifyIntervalMs = 50 }),
        "onWrite": (.behaviour, { $0.onWrite = WriteHook(argv: ["/bin/true"]) }),
        "delivery": (.behaviour, { $0.delivery = .all }),
        "queueLength": (.behaviour, { $0.queueLength = 8 }),
        "handler": (.behaviour, { $0.handler = HandlerDefinition() }),
        "acquireNotify": (.tree, { $0.acquireNotify = true }),
        "acquireWrite": (.tree, { $0.acquireWrite = true }),
        "accept": (.behaviour, { $0.accept = AcceptRule(type: .uint8, condition: .range(min: nil, max: .unsigned(9))) }),
        "handle": (.tree, { $0.handle = 0x20 }),
        "descriptors": (
            .children, { $0.descriptors.append(DescriptorDefinition(id: "second", uuid: otherUUID, flags: [.read])) }
        )
    ]
    static let descriptorChanges: [String: (ReloadClass, @Sendable (inout DescriptorDefinition) -> Void)] = [
        "id": (.identity, { $0.id = "renamed" }),
        "uuid": (.tree, { $0.uuid = otherUUID }),
        "flags": (.tree, { $0.flags.append(.write) }),
        "value": (.initialValue, { $0.value = [9] }),
        "minLength": (.tree, { $0.minLength = 1 }),
        "maxLength": (.tree, { $0.maxLength = 100 }),
        "handle": (.tree, { $0.handle = 0x20 })
    ]

    /// Stored properties of a definition that are not keys of the file.
    static let notKeys: Set<String> = [
        "sourcePath",  // where the definition sits in the file; never a change
        "valueType"  // derived from `value` and `update`
    ]

    static func fields(of value: Any) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label)).subtracting(notKeys)
    }

    @Test("every field of a definition is a key with a row, so with a reload class")
    func everyFieldHasARow() {
        #expect(Self.fields(of: Self.base) == Set(ConfigurationKeys.topLevel.map(\.name)))
        #expect(Self.fields(of: Self.service) == Set(ConfigurationKeys.service.map(\.name)))
        #expect(Self.fields(of: Self.characteristic) == Set(ConfigurationKeys.characteristic.map(\.name)))
        #expect(Self.fields(of: Self.descriptor) == Set(ConfigurationKeys.descriptor.map(\.name)))
    }

    @Test("each level names a key once")
    func namesAreUnique() {
        for names in [
            ConfigurationKeys.topLevel.map(\.name), ConfigurationKeys.service.map(\.name),
            ConfigurationKeys.characteristic.map(\.name), ConfigurationKeys.descriptor.map(\.name)
        ] {
            #expect(Set(names).count == names.count, "\(names)")
        }
    }

    /// Checks that `diff` is what a change of a key of class `reload` must give.
    static func expect(
        _ diff: ConfigurationDiff, is reload: ReloadClass, key: String, element id: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let comment = Comment(rawValue: "\(key) (\(reload)): \(diff.summary)")
        switch reload {
        case .tree, .children:
            #expect(!diff.treeChanges.isEmpty, comment, sourceLocation: sourceLocation)
            #expect(diff.behaviourChanges.isEmpty && diff.restartOnly.isEmpty, comment, sourceLocation: sourceLocation)
        case .identity:
            #expect(
                diff.treeChanges.contains { $0.hasSuffix(" \(id) removed") }, comment, sourceLocation: sourceLocation)
            #expect(
                diff.treeChanges.contains { $0.hasSuffix(" renamed added") }, comment, sourceLocation: sourceLocation)
        case .behaviour:
            #expect(diff.behaviourChanges == [id], comment, sourceLocation: sourceLocation)
            #expect(diff.treeChanges.isEmpty && diff.initialValues.isEmpty, comment, sourceLocation: sourceLocation)
        case .initialValue:
            #expect(diff.initialValues.map(\.id) == [id], comment, sourceLocation: sourceLocation)
            #expect(!diff.needsNewApplication && diff.restartOnly.isEmpty, comment, sourceLocation: sourceLocation)
        case .advertisements:
            #expect(diff.changedAdvertisements.map(\.id) == ["main"], comment, sourceLocation: sourceLocation)
            #expect(!diff.needsNewApplication && diff.restartOnly.isEmpty, comment, sourceLocation: sourceLocation)
        case .restart:
            #expect(diff.restartOnly == [key], comment, sourceLocation: sourceLocation)
            #expect(!diff.needsNewApplication && diff.initialValues.isEmpty, comment, sourceLocation: sourceLocation)
        case .nothing:
            #expect(diff.isEmpty, comment, sourceLocation: sourceLocation)
        }
    }

    @Test("a changed top-level key is handled as its row says")
    func topLevel() throws {
        for key in ConfigurationKeys.topLevel {
            let (reload, change) = try #require(
                Self.topLevelChanges[key.name], "no entry for top-level key \(key.name) here")
            #expect(key.reload == reload, "\(key.name) is \(key.reload), was \(reload)")
            var new = Self.base
            change(&new)
            #expect(key.differs(Self.base, new), "\(key.name)")
            Self.expect(ConfigurationDiff(from: Self.base, to: new), is: key.reload, key: key.name, element: "")
        }
        #expect(Set(Self.topLevelChanges.keys) == Set(ConfigurationKeys.topLevel.map(\.name)))
    }

    @Test("a changed service key is handled as its row says")
    func service() throws {
        for key in ConfigurationKeys.service {
            let (reload, change) = try #require(
                Self.serviceChanges[key.name], "no entry for service key \(key.name) here")
            #expect(key.reload == reload, "\(key.name) is \(key.reload), was \(reload)")
            var new = Self.base
            change(&new.services[0])
            #expect(key.differs(Self.base.services[0], new.services[0]), "\(key.name)")
            Self.expect(ConfigurationDiff(from: Self.base, to: new), is: key.reload, key: key.name, element: "svc")
        }
        #expect(Set(Self.serviceChanges.keys) == Set(ConfigurationKeys.service.map(\.name)))
    }

    @Test("a changed characteristic key is handled as its row says")
    func characteristic() throws {
        for key in ConfigurationKeys.characteristic {
            let (reload, change) = try #require(
                Self.characteristicChanges[key.name], "no entry for characteristic key \(key.name) here")
            #expect(key.reload == reload, "\(key.name) is \(key.reload), was \(reload)")
            var new = Self.base
            change(&new.services[0].characteristics[0])
            #expect(key.differs(Self.characteristic, new.services[0].characteristics[0]), "\(key.name)")
            Self.expect(ConfigurationDiff(from: Self.base, to: new), is: key.reload, key: key.name, element: "label")
        }
        #expect(Set(Self.characteristicChanges.keys) == Set(ConfigurationKeys.characteristic.map(\.name)))
    }

    @Test("a changed descriptor key is handled as its row says")
    func descriptor() throws {
        for key in ConfigurationKeys.descriptor {
            let (reload, change) = try #require(
                Self.descriptorChanges[key.name], "no entry for descriptor key \(key.name) here")
            #expect(key.reload == reload, "\(key.name) is \(key.reload), was \(reload)")
            var new = Self.base
            change(&new.services[0].characteristics[0].descriptors[0])
            #expect(key.differs(Self.descriptor, new.services[0].characteristics[0].descriptors[0]), "\(key.name)")
            Self.expect(
                ConfigurationDiff(from: Self.base, to: new), is: key.reload, key: key.name, element: "label-desc")
        }
        #expect(Set(Self.descriptorChanges.keys) == Set(ConfigurationKeys.descriptor.map(\.name)))
    }

    @Test("the decoder accepts exactly the keys of the tables")
    func decoderKeys() throws {
        let text = """
            {"version": 1, "services": [{"uuid": "180f", "colour": 1,
              "characteristics": [{"uuid": "2a19", "flags": ["read"], "colour": 1,
                "descriptors": [{"uuid": "2901", "flags": ["read"], "colour": 1}]}]}], "colour": 1}
            """
        guard case .failure(let errors) = ConfigurationLoader.parse(Array(text.utf8)) else {
            Issue.record("a definition with unknown keys loaded")
            return
        }
        let paths = Set(errors.issues.filter { $0.message.hasPrefix("unknown key") }.map(\.path))
        #expect(
            paths == [
                "colour", "services[0].colour", "services[0].characteristics[0].colour",
                "services[0].characteristics[0].descriptors[0].colour"
            ])
    }
}
