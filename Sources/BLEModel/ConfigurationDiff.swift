// SPDX-License-Identifier: MIT

/// What a reload changes: the difference between the configuration being served and a
/// newly loaded one, sorted by how much disruption applying it takes. Which key falls where
/// is its row's `ReloadClass` in `ConfigurationKeys`; nothing here names a key.
///
/// - `treeChanges`: what bluetoothd sees of the GATT tree (services, characteristics and
///   descriptors added, removed, moved or reordered, or a key of class `tree` changed).
///   bluetoothd ignores `InterfacesAdded` on a registered application
///   (docs/bluez-contract.md §1), so any of these means registering again.
/// - `behaviourChanges`: a `behaviour` key of a characteristic kept in the tree; it needs a
///   new attribute database too.
/// - `initialValues`: a configured `value` (`initialValue`) changed on an attribute kept in
///   the tree; applied in place to attributes nobody has written.
/// - Advertisements are matched by id; `changedAdvertisements` go out as
///   `PropertiesChanged` without registering again.
/// - `restartOnly`: top-level keys gattd reads only at start (`restart`: `adapter`,
///   `alias`, `security`, `channels`).
///
/// `sourcePath` (where a definition sits in the file) never counts as a change.
public struct ConfigurationDiff: Sendable, Equatable {
    /// A new configured value for the attribute (characteristic or descriptor) `id`.
    public struct ValueChange: Sendable, Equatable {
        public var id: String
        public var value: [UInt8]
        public init(id: String, value: [UInt8]) {
            self.id = id
            self.value = value
        }
    }

    /// One phrase per change, e.g. `characteristic hr.extra added`.
    public var treeChanges: [String] = []
    /// Ids of characteristics whose behaviour settings changed.
    public var behaviourChanges: [String] = []
    /// In definition order.
    public var initialValues: [ValueChange] = []
    public var addedAdvertisements: [AdvertisementDefinition] = []
    public var removedAdvertisements: [String] = []
    public var changedAdvertisements: [AdvertisementDefinition] = []
    /// Names of top-level settings that changed but apply only after a restart.
    public var restartOnly: [String] = []

    public init(from old: Configuration, to new: Configuration) {
        treeChanges = Self.treeChanges(old, new)
        behaviourChanges = Self.behaviourChanges(old, new)
        initialValues = Self.initialValues(old, new)
        let oldAdverts = Dictionary(old.advertisements.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newIDs = Set(new.advertisements.map(\.id))
        for advertisement in new.advertisements {
            guard let before = oldAdverts[advertisement.id] else {
                addedAdvertisements.append(advertisement)
                continue
            }
            var comparable = before
            comparable.sourcePath = advertisement.sourcePath
            if comparable != advertisement { changedAdvertisements.append(advertisement) }
        }
        removedAdvertisements = old.advertisements.map(\.id).filter { !newIDs.contains($0) }
        restartOnly = ConfigurationKeys.topLevel.filter { $0.reload == .restart && $0.differs(old, new) }.map(\.name)
    }

    /// Whether the GATT application must be rebuilt and registered again.
    public var needsNewApplication: Bool { !treeChanges.isEmpty || !behaviourChanges.isEmpty }

    public var isEmpty: Bool {
        treeChanges.isEmpty && behaviourChanges.isEmpty && initialValues.isEmpty && addedAdvertisements.isEmpty
            && removedAdvertisements.isEmpty && changedAdvertisements.isEmpty && restartOnly.isEmpty
    }

    /// One line for the log, e.g. `GATT tree: characteristic x added; advertisements
    /// changed: main; 1 initial value`; `no changes` when empty.
    public var summary: String {
        var parts: [String] = []
        if !treeChanges.isEmpty { parts.append("GATT tree: " + treeChanges.joined(separator: ", ")) }
        if !behaviourChanges.isEmpty { parts.append("behaviour of " + behaviourChanges.joined(separator: ", ")) }
        if !initialValues.isEmpty {
            let noun = initialValues.count == 1 ? "initial value" : "initial values"
            parts.append("\(noun) of " + initialValues.map(\.id).joined(separator: ", "))
        }
        if !addedAdvertisements.isEmpty {
            parts.append("advertisements added: " + addedAdvertisements.map(\.id).joined(separator: ", "))
        }
        if !removedAdvertisements.isEmpty {
            parts.append("advertisements removed: " + removedAdvertisements.joined(separator: ", "))
        }
        if !changedAdvertisements.isEmpty {
            parts.append("advertisements changed: " + changedAdvertisements.map(\.id).joined(separator: ", "))
        }
        if !restartOnly.isEmpty { parts.append("needs a restart: " + restartOnly.joined(separator: ", ")) }
        return parts.isEmpty ? "no changes" : parts.joined(separator: "; ")
    }
}

extension ConfigurationDiff {
    /// One node of the tree as bluetoothd sees it, without its children.
    private enum Node {
        case service(ServiceDefinition)
        case characteristic(in: String, CharacteristicDefinition)
        case descriptor(in: String, DescriptorDefinition)

        var kind: String {
            switch self {
            case .service: "service"
            case .characteristic: "characteristic"
            case .descriptor: "descriptor"
            }
        }

        var id: String {
            switch self {
            case .service(let service): service.id
            case .characteristic(_, let characteristic): characteristic.id
            case .descriptor(_, let descriptor): descriptor.id
            }
        }

        /// Whether bluetoothd would see the two as the same: same kind and parent, and no
        /// key of class `tree` changed.
        func sameShape(as other: Node) -> Bool {
            switch (self, other) {
            case (.service(let a), .service(let b)):
                !ConfigurationKeys.service.differ(.tree, a, b)
            case (.characteristic(let parentA, let a), .characteristic(let parentB, let b)):
                parentA == parentB && !ConfigurationKeys.characteristic.differ(.tree, a, b)
            case (.descriptor(let parentA, let a), .descriptor(let parentB, let b)):
                parentA == parentB && !ConfigurationKeys.descriptor.differ(.tree, a, b)
            default:
                false
            }
        }
    }

    private static func nodes(_ configuration: Configuration) -> [Node] {
        var result: [Node] = []
        for service in configuration.services {
            result.append(.service(service))
            for characteristic in service.characteristics {
                result.append(.characteristic(in: service.id, characteristic))
                for descriptor in characteristic.descriptors {
                    result.append(.descriptor(in: characteristic.id, descriptor))
                }
            }
        }
        return result
    }

    private static func treeChanges(_ old: Configuration, _ new: Configuration) -> [String] {
        let before = nodes(old)
        let after = nodes(new)
        let beforeByID = Dictionary(before.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let afterIDs = Set(after.map(\.id))
        var changes: [String] = []
        for node in after {
            guard let previous = beforeByID[node.id] else {
                changes.append("\(node.kind) \(node.id) added")
                continue
            }
            if !previous.sameShape(as: node) { changes.append("\(node.kind) \(node.id) changed") }
        }
        for node in before where !afterIDs.contains(node.id) {
            changes.append("\(node.kind) \(node.id) removed")
        }
        if changes.isEmpty && before.map(\.id) != after.map(\.id) {
            changes.append("order changed")
        }
        return changes
    }

    private static func characteristics(_ configuration: Configuration) -> [CharacteristicDefinition] {
        configuration.services.flatMap(\.characteristics)
    }

    private static func behaviourChanges(_ old: Configuration, _ new: Configuration) -> [String] {
        let before = Dictionary(characteristics(old).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return characteristics(new).compactMap { characteristic in
            guard let previous = before[characteristic.id] else { return nil }
            let same = !ConfigurationKeys.characteristic.differ(.behaviour, previous, characteristic)
            return same ? nil : characteristic.id
        }
    }

    /// `id -> value` of every characteristic and descriptor, in definition order.
    private static func values(_ configuration: Configuration) -> [(String, [UInt8])] {
        characteristics(configuration).flatMap { characteristic in
            [(characteristic.id, characteristic.value)] + characteristic.descriptors.map { ($0.id, $0.value) }
        }
    }

    private static func initialValues(_ old: Configuration, _ new: Configuration) -> [ValueChange] {
        let before = Dictionary(values(old), uniquingKeysWith: { first, _ in first })
        return values(new).compactMap { id, value in
            guard let previous = before[id], previous != value else { return nil }
            return ValueChange(id: id, value: value)
        }
    }
}
