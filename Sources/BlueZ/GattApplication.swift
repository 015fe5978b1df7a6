// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging

/// gattd's GATT application as bluetoothd sees it: one application per service (a service
/// and the services it includes or is included by stay together: bluetoothd resolves
/// `Includes` only within one application), each an ObjectManager at
/// `/org/gattd/app/<first service>` with one object per service, characteristic and
/// descriptor below it (`groups`). bluetoothd takes several applications from one bus name
/// at different paths, so a reload registers, unregisters or replaces only the services
/// that changed (docs/bluez-contract.md §1).
///
/// Objects are exported in the order bluetoothd needs: included services before the
/// services that include them (bluetoothd resolves `Includes` against services it has
/// already created, docs/bluez-contract.md §1), each service followed by its
/// characteristics and their descriptors.
public final class GattApplication: NotificationSink {
    public let rootPath: ObjectPath
    let connection: BusConnection
    private(set) var database: AttributeDatabase
    private(set) var requests: GattRequestHandler
    private(set) var services: [ExportedService] = []
    /// The exported characteristics, by the identity of their attribute in `database`: the
    /// signal path looks one up per notification, and hashing one word costs about half
    /// what hashing the id's bytes does (BENCHMARKS.md).
    private(set) var characteristics: [ObjectIdentifier: ExportedAttribute] = [:]
    /// The applications bluetoothd is given, in registration order.
    private(set) var groups: [Group] = []
    /// The configuration whose tree is exported.
    private var exported: Configuration?
    /// Where the attributes are asked to go, and what bluetoothd wrote back.
    private var handles: HandleBook
    let logger: Logger
    /// Called with every attribute's handle once bluetoothd has accepted the tree (to be
    /// saved and requested again: `registered()`).
    public var onHandles: ((AttributeHandles) -> Void)?

    /// Exports the tree of `configuration`, backed by `service`'s database; calls go to
    /// `service`, and the application becomes its notifier's sink.
    /// `remembered`: the handles bluetoothd gave the attributes before (saved state), asked
    /// for again (`HandleLayout`).
    /// `session`: whose owner alone may call the objects.
    public init(
        configuration: Configuration, service: RequestService, connection: BusConnection, session: BlueZSession,
        logger: Logger, remembered: AttributeHandles = AttributeHandles()
    ) throws(DBusError) {
        self.rootPath = BlueZNames.applicationRoot
        self.connection = connection
        self.database = service.runtime.database
        self.logger = logger
        self.requests = GattRequestHandler(
            service: service, sockets: AcquiredSockets(loop: connection.loop, service: service, logger: logger),
            session: session, logger: logger)
        handles = HandleBook(requested: AttributeHandles(), logger: logger)
        try build(configuration, remembered: remembered)
        service.runtime.notifier.sink = self
    }

    /// The roots of the applications bluetoothd is given (`BlueZRegistrar` registers each).
    public var groupRoots: [ObjectPath] { groups.map(\.root) }

    /// The root of the application that holds service `id`, if any (to register that
    /// service alone again: `BlueZRegistrar.reregister(service:)`).
    public func groupRoot(containing id: String) -> ObjectPath? {
        groups.first { $0.serviceIDs.contains(id) }?.root
    }

    /// The applications that `configuration` would not keep as they are: removed, or
    /// changed in anything bluetoothd reads (services, characteristics, descriptors,
    /// UUIDs, flags, handles, includes, socket paths). Unregister these before `rebuild`.
    public func groupsLeaving(for configuration: Configuration) -> [ObjectPath] {
        let kept = keptGroups(configuration)
        return groups.filter { !kept.contains($0.key) }.map(\.root)
    }

    /// The applications exported now that `configuration` keeps as bluetoothd holds them:
    /// the same services at the handles bluetoothd gave them (requested, or chosen by it
    /// and written back), as keys of `groups`.
    private func keptGroups(_ configuration: Configuration) -> Set<Group.Key> {
        guard let exported else { return [] }
        let current = handles.current
        let new = Set(plan(configuration, remembered: current).groups)
        let held = plan(exported, remembered: current).groups
        guard held.count == groups.count else { return [] }
        return Set(zip(groups, held).filter { new.contains($0.1) }.map(\.0.key))
    }

    /// Replaces the tree (reload) with the services of `configuration`, backed by
    /// `service`'s (new) database. An application whose services bluetoothd would read the
    /// same (`groupsLeaving`) stays registered: its objects get the new backing silently
    /// (no `InterfacesRemoved`/`InterfacesAdded`), keeping their sockets and subscriptions.
    /// The others are removed from the bus and the new ones exported: call it once the
    /// leaving ones are unregistered, as bluetoothd removes a registered service on
    /// `InterfacesRemoved` and ignores `InterfacesAdded` (docs/bluez-contract.md §1); then
    /// register what `groupRoots` holds and bluetoothd does not.
    /// The trusted sender stays the session's owner.
    /// Attributes that stay keep their handles; new ones go after them (`HandleLayout`).
    public func rebuild(configuration: Configuration, service: RequestService) throws(DBusError) {
        let remembered = handles.current
        let keptNow = keptGroups(configuration)
        let previousDatabase = database
        let keptIDs = Set(groups.filter { keptNow.contains($0.key) }.flatMap(\.attributeIDs))
        for group in groups where !keptNow.contains(group.key) { unexport(group) }
        // As the new plan names them: the roots of the kept ones do not change.
        let keptRoots = Set(groups.filter { keptNow.contains($0.key) }.map(\.root))
        services.removeAll()
        characteristics.removeAll()
        let previous = requests
        database = service.runtime.database
        requests = GattRequestHandler(
            service: service, sockets: AcquiredSockets(loop: connection.loop, service: service, logger: logger),
            session: previous.session, logger: logger)
        requests.sockets.onCentralSubscription = onCentralSubscription
        requests.sockets.model = previous.sockets.model
        // What bluetoothd holds of the kept services goes on: their sockets, and the
        // subscriptions it started with StartNotify (it will not call it again).
        for id in keptIDs {
            guard let old = previousDatabase[id], let new = database[id] else { continue }
            requests.sockets.adopt(id, from: previous.sockets, as: new)
            if old.isNotifying { _ = service.setNotifying(new, true) }
        }
        previous.sockets.closeAll()
        try build(configuration, remembered: remembered, replacing: keptRoots)
        service.runtime.notifier.sink = self
    }

    /// A central that bluetoothd names subscribed to a characteristic through its own
    /// `AcquireNotify` socket (`true`), or that socket closed (`false`). bluetoothd names the
    /// central in `AcquireNotify`'s `device` option: one socket per central from 5.69; on
    /// 5.66 one shared socket, named after the central that subscribed first.
    public var onCentralSubscription: ((Attribute, String, Bool) -> Void)? {
        didSet { requests.sockets.onCentralSubscription = onCentralSubscription }
    }

    /// How bluetoothd shares notify sockets (`CentralWatch` learns it from the adapter):
    /// decides whether a second shared socket means the first was lost, and whether values
    /// can be sent to chosen centrals.
    public var notifySocketModel: NotifySocketModel {
        get { requests.sockets.model }
        set {
            guard newValue != requests.sockets.model else { return }
            requests.sockets.model = newValue
            logger.info("bluetoothd's notify sockets", metadata: ["model": "\(newValue)"])
        }
    }

    /// The unique name of the `org.bluez` owner whose calls are trusted: the session's
    /// (`BlueZSession.owner`), which it sets before any observer hears of the change.
    public var trustedSender: String? { requests.trustedSender }

    public var serviceCount: Int { services.count }

    /// The characteristics each central is subscribed to through its own notify socket, by
    /// device path; nil unless bluetoothd gives each central one.
    public func centralSubscriptions() -> [String: [String]]? { requests.sockets.subscriptionsByDevice() }

    /// Every attribute's handle as far as gattd knows: requested, or written back by
    /// bluetoothd (empty before the first registration that let bluetoothd choose).
    public var currentHandles: AttributeHandles { handles.current }

    /// bluetoothd accepted the tree: its handles are final until the next registration.
    public func registered() {
        onHandles?(handles.current)
    }

    /// bluetoothd refused application `root` while gattd asked for handles: its next
    /// registration lets bluetoothd choose (its choice is then remembered); the other
    /// applications keep theirs. False when no handle of it was asked for, so the refusal is
    /// not about handles.
    public func fallBackToChosenHandles(after error: DBusError, in root: ObjectPath) -> Bool {
        guard let group = groups.first(where: { $0.root == root }),
            handles.dropRequested(services: Set(group.serviceIDs), attributes: Set(group.attributeIDs))
        else { return false }
        logger.warning(
            """
            bluetoothd refused the application at the requested handles; registering again with handles it \
            chooses, so attributes may move and caching centrals depend on Service Changed
            """,
            metadata: ["application": "\(root)", "error": "\(error.name): \(error.message)"])
        return true
    }

    /// How many `AcquireNotify` and `AcquireWrite` sockets characteristic `id` holds now.
    public func acquiredSockets(of id: String) -> (notify: Int, write: Int) {
        requests.sockets.counts(id)
    }

    /// One application bluetoothd is given: its root, its services, and what bluetoothd
    /// reads of them (`key`: equal keys mean bluetoothd would build the same services).
    struct Group {
        let root: ObjectPath
        let serviceIDs: [String]
        /// Every characteristic's and descriptor's id.
        let attributeIDs: [String]
        let key: Key
        /// Exported objects, in export order.
        var paths: [ObjectPath] = []

        struct Key: Hashable {
            let root: ObjectPath
            let shape: [String]
        }
    }

    /// The handles `configuration` asks for and its applications: services joined by
    /// `includes` form one, every other service is one of its own.
    private func plan(_ configuration: Configuration, remembered: AttributeHandles) -> (layout: HandleLayout, groups: [Group.Key], members: [[ServiceDefinition]]) {
        let layout = HandleLayout.plan(configuration, remembered: remembered)
        let ordered = configuration.servicesInRegistrationOrder
        // Union of services linked by includes, in registration order.
        var leader: [String: String] = [:]
        func find(_ id: String) -> String {
            var id = id
            while let next = leader[id], next != id { id = next }
            return id
        }
        for service in ordered { leader[service.id] = service.id }
        for service in ordered {
            for included in service.includes where leader[included] != nil {
                let (a, b) = (find(service.id), find(included))
                if a != b { leader[b] = a }
            }
        }
        var members: [[ServiceDefinition]] = []
        var index: [String: Int] = [:]
        for service in ordered {
            let root = find(service.id)
            if let at = index[root] {
                members[at].append(service)
            } else {
                index[root] = members.count
                members.append([service])
            }
        }
        let sockets = usableSocketPaths(configuration, quiet: true)
        var used = Set<ObjectPath>()
        let keys = members.map { services in
            let root = rootPath.appendingUniqueElement(for: services[0].id, used: &used)
            var shape: [String] = []
            for service in services {
                shape.append(
                    "S \(service.id) \(service.uuid) \(service.primary) \(service.includes) "
                        + "\(layout.handles.services[service.id] ?? 0)")
                let byID = Dictionary(service.characteristics.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                for id in layout.characteristicOrder[service.id] ?? [] {
                    guard let characteristic = byID[id] else { continue }
                    shape.append(
                        "C \(id) \(characteristic.uuid) \(characteristic.flags.map(\.rawValue)) "
                            + "\(layout.handles.characteristics[id] ?? 0) \(sockets[id]?.rawValue ?? 0)")
                    for descriptor in characteristic.descriptors {
                        shape.append(
                            "D \(descriptor.id) \(descriptor.uuid) \(descriptor.flags.map(\.rawValue)) "
                                + "\(layout.handles.descriptors[descriptor.id] ?? 0)")
                    }
                    shape.append("order \(layout.descriptorOrder[id] ?? [])")
                }
            }
            return Group.Key(root: root, shape: shape)
        }
        return (layout, keys, members)
    }

    /// Exports the tree of `configuration`; the objects of the applications rooted at
    /// `replacing` (exported already, and read by bluetoothd) get their new backing silently.
    private func build(
        _ configuration: Configuration, remembered: AttributeHandles, replacing kept: Set<ObjectPath> = []
    ) throws(DBusError) {
        let (layout, keys, members) = plan(configuration, remembered: remembered)
        exported = configuration
        for line in layout.moved {
            logger.warning("an attribute cannot keep its handle: \(line)")
        }
        handles = HandleBook(requested: layout.handles, logger: logger)
        handles.requests = requests
        logger.debug(
            "requesting handles",
            metadata: [
                "services": "\(layout.handles.services.sorted { $0.key < $1.key }.map { "\($0.key)=\(HandleBook.text($0.value))" })",
                "characteristics": "\(layout.handles.characteristics.count)",
            ])
        let socketPaths = usableSocketPaths(configuration)
        let sockets = requests.sockets
        database.observeSubscriptions { [weak sockets] attribute in
            if !attribute.isNotifying { sockets?.subscriptionEnded(attribute) }
        }
        groups = []
        for (key, services) in zip(keys, members) {
            let silently = kept.contains(key.root)
            connection.addObjectManager(at: key.root)
            var group = Group(
                root: key.root, serviceIDs: services.map(\.id),
                attributeIDs: services.flatMap { $0.characteristics.flatMap { [$0.id] + $0.descriptors.map(\.id) } },
                key: key)
            var used = Set<ObjectPath>()
            var servicePaths: [String: ObjectPath] = [:]
            for service in services {
                let path = key.root.appendingUniqueElement(for: service.id, used: &used)
                servicePaths[service.id] = path
                let exported = ExportedService(path: path, definition: service, handles: handles)
                exported.includes = service.includes.compactMap { servicePaths[$0] }
                self.services.append(exported)
                try export(exported, at: path, into: &group, silently: silently)
                let byID = Dictionary(service.characteristics.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                // In the layout's order: bluetoothd places them in export order.
                for id in layout.characteristicOrder[service.id] ?? [] {
                    guard let characteristic = byID[id], let attribute = database[characteristic.id] else { continue }
                    let characteristicPath = path.appendingUniqueElement(for: characteristic.id, used: &used)
                    let object = ExportedAttribute(
                        path: characteristicPath, parentPath: path, attribute: attribute,
                        flags: characteristic.flags.map(\.rawValue), requests: requests, handles: handles,
                        sockets: socketPaths[characteristic.id] ?? [])
                    characteristics[ObjectIdentifier(attribute)] = object
                    try export(object, at: characteristicPath, into: &group, silently: silently)
                    let order = layout.descriptorOrder[characteristic.id] ?? []
                    let descriptors = characteristic.descriptors.enumerated().sorted {
                        (order.firstIndex(of: $0.element.id) ?? .max) < (order.firstIndex(of: $1.element.id) ?? .max)
                    }
                    for (index, descriptor) in descriptors {
                        guard let descriptorAttribute = database[descriptor.id] else { continue }
                        let descriptorPath = try characteristicPath.appending("desc\(index)")
                        let object = ExportedAttribute(
                            path: descriptorPath, parentPath: characteristicPath,
                            attribute: descriptorAttribute, flags: descriptor.flags.map(\.rawValue),
                            requests: requests, handles: handles)
                        try export(object, at: descriptorPath, into: &group, silently: silently)
                    }
                }
            }
            groups.append(group)
        }
    }

    /// The socket paths each characteristic asked for (`acquireNotify`, `acquireWrite`),
    /// or none when this bus connection cannot pass file descriptors (then they use
    /// signals and `WriteValue`, and the log says so once).
    private func usableSocketPaths(_ configuration: Configuration, quiet: Bool = false) -> [String: AcquiredSockets.Kinds] {
        var kinds: [String: AcquiredSockets.Kinds] = [:]
        for characteristic in configuration.services.flatMap(\.characteristics) {
            var wanted: AcquiredSockets.Kinds = []
            if characteristic.acquireNotify { wanted.insert(.notify) }
            if characteristic.acquireWrite { wanted.insert(.write) }
            if !wanted.isEmpty { kinds[characteristic.id] = wanted }
        }
        guard !kinds.isEmpty, !connection.canSendUnixFDs else { return kinds }
        guard !quiet else { return [:] }
        logger.warning(
            """
            this bus connection cannot pass file descriptors: acquireNotify and acquireWrite characteristics use \
            D-Bus signals and WriteValue instead
            """,
            metadata: ["gatt.ids": "\(kinds.keys.sorted().joined(separator: ","))"])
        return [:]
    }

    private func export(
        _ object: any DBusObject, at path: ObjectPath, into group: inout Group, silently: Bool
    ) throws(DBusError) {
        if silently, connection.exportedObject(at: path) != nil {
            try connection.replace(object, at: path)
        } else {
            try connection.export(object, at: path)
        }
        group.paths.append(path)
    }

    /// Removes one application's objects from the bus (bluetoothd, if it still holds the
    /// application, removes its services) and its ObjectManager.
    private func unexport(_ group: Group) {
        for path in group.paths.reversed() { connection.unexport(path) }
        connection.removeObjectManager(at: group.root)
    }

    /// Removes every object from the bus (bluetoothd treats the services as gone) and
    /// closes the sockets bluetoothd acquired.
    public func unexportAll() {
        requests.sockets.closeAll()
        for group in groups { unexport(group) }
        groups.removeAll()
    }

    /// `value` to the centrals `targets` only (CoreBluetooth's `onSubscribedCentrals:`),
    /// each named by its address and found by its device object, through their own notify
    /// sockets; the stored value does not change. Refused, naming why, where bluetoothd
    /// cannot target them: never sent to all instead.
    public func send(
        _ attribute: Attribute, value: [UInt8], to targets: [(address: String, device: String)]
    ) -> Result<Void, TargetRefusal> {
        guard attribute.isNotifying else { return .failure(.notSubscribed) }
        let result = requests.sockets.send(attribute, value: value, to: targets)
        if case .success = result {
            logger.debug(
                "notified chosen centrals",
                metadata: ["gatt.id": "\(attribute.id)", "length": "\(value.count)", "centrals": "\(targets.map(\.address))"])
        }
        return result
    }

    /// A subscribed characteristic's new value goes out as one datagram on each socket
    /// bluetoothd acquired for it (`acquireNotify`), else as PropertiesChanged(Value); either
    /// way bluetoothd turns it into a notification or indication for the subscribed centrals.
    /// The signal is addressed to bluetoothd alone (docs/security.md): no other process on
    /// the bus receives it, whatever match rules it adds.
    public func send(_ attribute: Attribute, value: [UInt8]) -> Bool {
        guard attribute.isNotifying else { return false }
        if let sent = requests.sockets.send(attribute, value: value) { return sent }
        guard let object = characteristics[ObjectIdentifier(attribute)], let bluez = trustedSender else { return false }
        do {
            try object.notifyValue(value, on: connection, to: bluez)
        } catch {
            logger.error("could not notify", metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
            return false
        }
        logger.debug("notified", metadata: ["gatt.id": "\(attribute.id)", "length": "\(value.count)"])
        return true
    }
}

