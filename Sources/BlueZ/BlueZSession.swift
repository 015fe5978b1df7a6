// SPDX-License-Identifier: MIT

public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// gattd's one view of bluetoothd: who owns `org.bluez`, which adapter gattd serves on,
/// and what bluetoothd says about that adapter and its devices.
///
/// bluetoothd keeps gattd's registrations only in memory and tells nobody when it restarts
/// or loses an adapter (docs/bluez-contract.md §7). The session alone watches for that:
/// `NameOwnerChanged` for `org.bluez`, `InterfacesAdded`/`InterfacesRemoved` on its object
/// tree, and `PropertiesChanged` of the chosen adapter (`Powered`) and of the devices under
/// it. It lists bluetoothd's objects (the one `GetManagedObjects` of the BlueZ side: what it
/// found under the adapter is `listing` while observers hear `adapterAvailable`), picks the
/// adapter (the configured one, else the first by path with `GattManager1`) and tells its
/// observers what happened, in the order they were added, one event at a time (`Event`).
///
/// Every change of the owner or the adapter starts a new `generation`. Code that calls
/// bluetoothd about the current owner or adapter takes the generation before the call
/// and drops the answer unless `isCurrent` still holds: replies from before a change are
/// harmless.
public final class BlueZSession {
    /// The adapter gattd serves on, and the `org.bluez` owner that has it.
    public struct Adapter: Equatable, Sendable {
        public let path: ObjectPath
        /// The unique name of the `org.bluez` owner.
        public let owner: String
        public init(path: ObjectPath, owner: String) {
            self.path = path
            self.owner = owner
        }

        /// The adapter's name, the last element of its path (`hci0`).
        public var name: String { String(path.rawValue.split(separator: "/").last ?? "") }
    }

    /// What observers hear, in this order for one change: for a new owner `appeared`, then
    /// `adapterAvailable` or `noAdapter`; for an adapter removed `adapterGone`; for the
    /// owner leaving `vanished` (which ends the adapter too).
    public enum Event: Equatable, Sendable {
        /// The first answer about `org.bluez`: nobody owns it.
        case absent
        /// `owner` owns `org.bluez` (first seen, or a new one); its adapters are being listed.
        case appeared(owner: String)
        /// bluetoothd left the bus; `adapter` is the one gattd was using, if any.
        case vanished(adapter: Adapter?)
        /// The listing found no usable adapter (or the one in use was removed and none other
        /// is chosen): waiting for `InterfacesAdded`. `preferred` is the configured name.
        case noAdapter(preferred: String?)
        /// The adapter gattd serves on from now on.
        case adapterAvailable(Adapter)
        /// The adapter in use was removed; bluetoothd is still there.
        case adapterGone(Adapter)
        /// `PropertiesChanged` of the adapter's `Adapter1`, with the properties changed; a
        /// `powered` follows when `Powered` is among them.
        case adapterProperties(changed: [String: DBusValue])
        /// The adapter's `Powered` changed.
        case powered(Bool)
        /// `InterfacesAdded` for the adapter or an object under it (a `Device1`): the
        /// interfaces with their properties.
        case interfacesAdded(path: ObjectPath, interfaces: [String: [String: DBusValue]])
        /// `InterfacesRemoved` for the adapter or an object under it.
        case interfacesRemoved(path: ObjectPath, interfaces: [String])
        /// `PropertiesChanged` of a `Device1` under the adapter.
        case deviceChanged(path: ObjectPath, changed: [String: DBusValue])
    }

    /// Something told about the session's events.
    public typealias Observer = (Event) -> Void

    /// The unique name that owns `org.bluez`, if anyone does.
    public private(set) var owner: String?
    /// The adapter in use, if one is chosen.
    public private(set) var adapter: Adapter?
    /// Bumped whenever the owner or the adapter changes (and at `stop`).
    public private(set) var generation = 0
    /// The configured adapter name (`hci1`), nil for the first with `GattManager1`.
    public let preferredAdapter: String?
    /// One of bluetoothd's objects: its path and its interfaces with their properties.
    public typealias Object = (path: ObjectPath, interfaces: [String: [String: DBusValue]])
    /// While observers hear `adapterAvailable`: the adapter and the objects under it (its
    /// devices) as bluetoothd listed them, or, for an adapter that appeared later, as its
    /// `InterfacesAdded` announced it. Empty at any other time. The signals that change
    /// them were subscribed before the listing was asked for, so nothing falls between.
    public private(set) var listing: [Object] = []

    private let connection: BusConnection
    /// The listing's retries (`RetryBackoff`).
    private let backoff: RetryBackoff
    private let logger: Logger
    private var observers: [Observer] = []
    /// Whether the first answer about `org.bluez` is in (`GetNameOwner` or a signal).
    private var answered = false
    private var started = false
    private var subscriptions: [SignalSubscription] = []

    public init(
        connection: BusConnection, preferredAdapter: String?, loop: EventLoop, logger: Logger,
        clock: LoopClock? = nil
    ) {
        self.connection = connection
        self.preferredAdapter = preferredAdapter
        backoff = RetryBackoff(clock: clock ?? .loop(loop))
        self.logger = logger
    }

    /// Adds `observer`; observers hear each event in the order they were added. Add them
    /// all before `start`.
    public func observe(_ observer: @escaping Observer) {
        observers.append(observer)
    }

    /// Whether nothing about the owner or the adapter changed since `generation` was `attempt`.
    public func isCurrent(_ attempt: Int) -> Bool { attempt == generation }

    /// Starts watching and asks who owns `org.bluez`.
    public func start() {
        guard !started else { return }
        started = true
        subscriptions.append(
            connection.subscribe(
                sender: Freedesktop.bus, path: Freedesktop.busPath,
                interface: Freedesktop.busInterface, member: Freedesktop.nameOwnerChanged, arg0: BlueZNames.service
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count == 3,
                    let newOwner = arguments[2].asString
                else { return }
                if newOwner.isEmpty { self.vanished() } else { self.appeared(owner: newOwner) }
            })
        // InterfacesAdded carries a{sa{sv}}, InterfacesRemoved as: either way the interface names.
        for member in [Freedesktop.interfacesAdded, Freedesktop.interfacesRemoved] {
            subscriptions.append(
                connection.subscribe(
                    sender: BlueZNames.service, path: BlueZNames.root, interface: Freedesktop.objectManager,
                    member: member, arg0: nil
                ) { [unowned self] message in
                    guard let owner = self.owner, message.sender == owner,
                        let arguments = try? message.arguments(), arguments.count == 2,
                        let path = arguments[0].asObjectPath
                    else { return }
                    if member == Freedesktop.interfacesAdded {
                        self.interfacesAdded(path: path, arguments[1])
                    } else {
                        self.interfacesRemoved(path: path, interfaces: arguments[1].asStringArray ?? [])
                    }
                })
        }
        watchAdapter()
        logger.info("waiting for org.bluez")
        connection.call(
            destination: Freedesktop.bus, path: Freedesktop.busPath,
            interface: Freedesktop.busInterface, member: Freedesktop.getNameOwner, arguments: [.string(BlueZNames.service)]
        ) { [unowned self] result in
            guard !self.answered, self.started else { return }
            if case .success(let reply) = result, let owner = (try? reply.arguments())?.first?.asString {
                self.appeared(owner: owner)
            } else {
                self.answered = true
                self.tell(.absent)
            }
        }
    }

    /// Stops watching; answers still on their way are dropped. Observers hear nothing more.
    public func stop() {
        guard started else { return }
        started = false
        generation += 1
        backoff.cancel()
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
    }

    private func tell(_ event: Event) {
        for observer in observers { observer(event) }
    }

    // MARK: - The owner

    private func appeared(owner: String) {
        answered = true
        guard owner != self.owner else { return }
        generation += 1
        self.owner = owner
        forgetAdapter()
        backoff.cancel()
        logger.info("org.bluez is on the bus", metadata: ["bluez.owner": "\(owner)"])
        tell(.appeared(owner: owner))
        findAdapter()
    }

    private func vanished() {
        guard owner != nil || !answered else { return }
        answered = true
        generation += 1
        owner = nil
        let previous = adapter
        forgetAdapter()
        backoff.cancel()
        logger.warning("org.bluez left the bus; registering again when it returns")
        tell(.vanished(adapter: previous))
    }

    // MARK: - The adapter

    private func findAdapter() {
        let attempt = generation
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.root,
            interface: Freedesktop.objectManager, member: Freedesktop.getManagedObjects, arguments: []
        ) { [unowned self] result in
            guard self.isCurrent(attempt) else { return }
            switch result {
            case .success(let reply):
                let objects = ((try? reply.arguments())?.first?.dictionaryEntries ?? []).compactMap {
                    entry -> Object? in
                    guard let path = entry.key.asObjectPath else { return nil }
                    return (path, Self.interfaces(entry.value))
                }
                let candidates = objects.filter { $0.interfaces[BlueZNames.gattManager] != nil }.map(\.path.rawValue)
                self.backoff.succeeded()
                self.choose(from: candidates, objects: objects)
            case .failure(let error):
                self.logger.error(
                    "could not list BlueZ objects", metadata: ["error": "\(error.name): \(error.message)"])
                self.scheduleRetry { self.findAdapter() }
            }
        }
    }

    private func scheduleRetry(_ action: @escaping () -> Void) {
        let attempt = generation
        backoff.retry { [unowned self] in
            guard self.isCurrent(attempt) else { return }
            action()
        }
    }

    /// `a{sa{sv}}` (an object's interfaces and their properties) as dictionaries.
    private static func interfaces(_ value: DBusValue) -> [String: [String: DBusValue]] {
        var interfaces: [String: [String: DBusValue]] = [:]
        for entry in value.dictionaryEntries ?? [] {
            guard let name = entry.key.asString else { continue }
            interfaces[name] = Dictionary(entry.value.variantDictionaryEntries ?? [], uniquingKeysWith: { $1 })
        }
        return interfaces
    }

    private func choose(from candidates: [String], objects: [Object]) {
        let chosen: String?
        if let preferredAdapter {
            chosen = candidates.first { $0.hasSuffix("/" + preferredAdapter) }
        } else {
            chosen = candidates.sorted().first
        }
        guard let owner, let chosen, let path = try? ObjectPath(chosen) else {
            logger.warning(
                "no usable adapter yet",
                metadata: ["adapter": "\(preferredAdapter ?? "any")", "available": "\(candidates.joined(separator: ","))"])
            tell(.noAdapter(preferred: preferredAdapter))
            return
        }
        generation += 1
        let adapter = Adapter(path: path, owner: owner)
        self.adapter = adapter
        logger.info(
            "using adapter",
            metadata: ["adapter": "\(adapter.name)", "chosen.by": "\(preferredAdapter == nil ? "first with GattManager1" : "configuration")"])
        listing = objects.filter { $0.path == path || $0.path.isDescendant(of: path) }
        tell(.adapterAvailable(adapter))
        listing = []
    }

    /// The adapter's properties (`Powered`) and its devices', watched once for everybody from
    /// the start (before any listing, so no change falls between a listing and its watch)
    /// and passed on for the adapter in use only.
    private func watchAdapter() {
        subscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, interface: Freedesktop.properties,
                member: Freedesktop.propertiesChanged, arg0: BlueZNames.adapter
            ) { [unowned self] message in
                guard message.sender == self.owner, let path = self.adapter?.path, message.path == path,
                    let arguments = try? message.arguments(), arguments.count >= 2,
                    let changed = arguments[1].variantDictionaryEntries
                else { return }
                let properties = Dictionary(changed, uniquingKeysWith: { $1 })
                self.tell(.adapterProperties(changed: properties))
                if let powered = properties["Powered"]?.asBool { self.tell(.powered(powered)) }
            })
        subscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, interface: Freedesktop.properties, member: Freedesktop.propertiesChanged,
                arg0: BlueZNames.device
            ) { [unowned self] message in
                guard message.sender == self.owner, let path = self.adapter?.path, let device = message.path,
                    device.isDescendant(of: path),
                    let arguments = try? message.arguments(), arguments.count >= 2,
                    let changed = arguments[1].variantDictionaryEntries
                else { return }
                self.tell(.deviceChanged(path: device, changed: Dictionary(changed, uniquingKeysWith: { $1 })))
            })
    }

    private func forgetAdapter() {
        adapter = nil
    }

    private func interfacesAdded(path: ObjectPath, _ value: DBusValue) {
        let interfaces = Self.interfaces(value)
        if let adapter {
            guard path == adapter.path || path.isDescendant(of: adapter.path) else { return }
            tell(.interfacesAdded(path: path, interfaces: interfaces))
            return
        }
        guard interfaces[BlueZNames.gattManager] != nil else { return }
        if let preferredAdapter, !path.rawValue.hasSuffix("/" + preferredAdapter) { return }
        logger.info("adapter appeared", metadata: ["bluez.path": "\(path)"])
        choose(from: [path.rawValue], objects: [(path, interfaces)])
    }

    private func interfacesRemoved(path: ObjectPath, interfaces: [String]) {
        guard let adapter else { return }
        if path == adapter.path, interfaces.contains(BlueZNames.gattManager) || interfaces.contains(BlueZNames.adapter) {
            generation += 1
            forgetAdapter()
            logger.warning(
                "adapter disappeared; registering again when it returns", metadata: ["bluez.path": "\(path)"])
            tell(.adapterGone(adapter))
            return
        }
        guard path == adapter.path || path.isDescendant(of: adapter.path) else { return }
        tell(.interfacesRemoved(path: path, interfaces: interfaces))
    }
}
