// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// Keeps gattd's advertisements registered with `org.bluez.LEAdvertisingManager1` on the
/// adapter the GATT application uses (docs/bluez-contract.md §7, §8).
///
/// It follows the `BlueZSession` (`handle(_:)`): registers when an adapter is available,
/// waits when it is gone, registers again when `Powered` goes true and `ActiveInstances`
/// shows the kernel dropped ours, when `LEAdvertisingManager1` appears late, and when
/// `Device1.Connected` goes false for advertisements with `readvertiseAfterDisconnect`;
/// and on `Release()` unless the advertisement's own `timeout` has run out. All calls are
/// asynchronous; replies from before the session's latest change are ignored.
public final class Advertiser {
    /// Where one advertisement stands.
    public enum State: Equatable, Sendable {
        case disabled
        case waitingForAdapter
        case registering
        case advertising
        /// bluetoothd refused it: the reason in plain words, and bluetoothd's answer as it
        /// came (what `gattd --doctor` matches against the known problems).
        case refused(String, Refusal)
        /// Its `timeout` ran out; not registered again until gattd restarts or it is updated.
        case expired
    }

    final class Slot {
        let exported: ExportedAdvertisement
        var state: State {
            didSet { if state != oldValue { onChange?(self) } }
        }
        var registeredAt: ContinuousClock.Instant?
        var onChange: ((Slot) -> Void)?
        init(exported: ExportedAdvertisement, state: State) {
            self.exported = exported
            self.state = state
        }
        var definition: AdvertisementDefinition { exported.definition }
        var id: String { exported.definition.id }
    }

    static let rootPath: ObjectPath = "/org/gattd/adv"
    static let releaseBackoff: Duration = .seconds(1)

    let connection: BusConnection
    let session: BlueZSession
    /// The release back-off's timers and the clock `Timeout` is measured on: the loop's in
    /// the daemon, a manual clock in tests.
    let clock: LoopClock
    let logger: Logger
    let alias: String?
    var slots: [Slot] = []
    /// Set by `stop`: nothing is registered any more, and answers still on their way are dropped.
    var stopped = false
    /// Called when bluetoothd has answered a registration (accepted or refused).
    public var onSettled: (() -> Void)?
    /// Called whenever an advertisement's state changes, with its id.
    public var onStateChange: ((String, State) -> Void)?
    /// The cancellers of the pending `after` timers, by sequence number.
    var timers: [Int: () -> Void] = [:]
    var timerSequence = 0
    /// The adapter's alias before gattd set the configured one ("" for its name), put back
    /// by `stop`; nil when gattd changed nothing.
    var aliasToRestore: String?
    /// From the manager's properties: false when `SupportedCapabilities` is absent, i.e.
    /// bluetoothd 5.66 without experimental features.
    var experimentalFeatures = false
    /// The kernel release, for naming a known cause of a refusal (`KnownProblems.cause`).
    public var kernel: KernelRelease?

    public init(
        configuration: Configuration, connection: BusConnection, session: BlueZSession, loop: EventLoop,
        logger: Logger, clock: LoopClock? = nil
    ) throws(DBusError) {
        self.connection = connection
        self.session = session
        self.clock = clock ?? .loop(loop)
        self.logger = logger
        self.alias = configuration.alias
        connection.addObjectManager(at: Self.rootPath)
        var used = Set<ObjectPath>()
        for definition in configuration.advertisements {
            let path = Self.rootPath.appendingUniqueElement(for: definition.id, used: &used)
            let exported = ExportedAdvertisement(path: path, definition: definition, session: session)
            let slot = Slot(exported: exported, state: definition.enabled ? .waitingForAdapter : .disabled)
            exported.onRelease = { [unowned self, unowned slot] in self.released(slot) }
            slot.onChange = { [unowned self] in self.onStateChange?($0.id, $0.state) }
            try connection.export(exported, at: path)
            slots.append(slot)
        }
    }

    /// True when no enabled advertisement waits for bluetoothd: each is advertising,
    /// refused, expired or disabled, or there is no adapter to register on. While the
    /// adapter lacks `LEAdvertisingManager1` this stays false.
    public var isSettled: Bool {
        adapterPath == nil || slots.allSatisfy { $0.state != .registering && $0.state != .waitingForAdapter }
    }

    /// The ids of the advertisements on air, in configuration order.
    public var advertisingIDs: [String] { slots.filter { $0.state == .advertising }.map(\.id) }

    /// The state of every advertisement, by id, in configuration order.
    public var states: [(id: String, state: State)] { slots.map { ($0.id, $0.state) } }

    func metadata(_ slot: Slot) -> Logger.Metadata {
        var result: Logger.Metadata = ["adv.id": "\(slot.id)", "dbus.path": "\(slot.exported.path)"]
        if let adapterPath { result["adapter"] = "\(adapterPath.elements.last ?? "")" }
        return result
    }

    // MARK: - Adapter presence (from the session)

    /// The adapter in use, while the advertiser runs.
    var adapterPath: ObjectPath? { stopped ? nil : session.adapter?.path }

    /// The session's generation when a call went out or a timer was set.
    var generation: Int { session.generation }

    /// Whether an answer or a timer from `attempt` still concerns the adapter in use.
    func isCurrent(_ attempt: Int) -> Bool { !stopped && session.isCurrent(attempt) }

    /// Follows the session: registers on the adapter, waits while there is none, and acts
    /// on the adapter's `Powered`, its advertising manager appearing and centrals leaving.
    public func handle(_ event: BlueZSession.Event) {
        guard !stopped else { return }
        switch event {
        case .adapterAvailable:
            adapterAvailable()
        case .adapterGone(let adapter):
            adapterGone(adapter)
        case .vanished(let adapter?):
            adapterGone(adapter)
        case .powered(let powered):
            poweredChanged(powered)
        case .interfacesAdded(let path, let interfaces):
            guard path == adapterPath, interfaces[BlueZNames.advertisingManager] != nil else { return }
            logger.info("LEAdvertisingManager1 appeared", metadata: ["bluez.path": "\(path)"])
            registerAll()
        case .deviceChanged(let device, let changed):
            guard changed["Connected"]?.asBool == false else { return }
            centralDisconnected(device)
        case .absent, .appeared, .vanished(nil), .noAdapter, .adapterProperties, .interfacesRemoved:
            break
        }
    }

    /// The adapter is ready for the GATT application: set the alias, read the manager's
    /// instance counts, register.
    private func adapterAvailable() {
        forgetTimers()
        setAlias()
        registerAll()
    }

    /// bluetoothd or the adapter went away: every registration is gone with it.
    private func adapterGone(_ adapter: BlueZSession.Adapter) {
        forgetTimers()
        for slot in slots where slot.state == .advertising || slot.state == .registering {
            slot.state = .waitingForAdapter
        }
        logger.info("advertisements wait for the adapter to return")
    }

    func forgetTimers() {
        for cancel in timers.values { cancel() }
        timers.removeAll()
    }

    /// Sets the configured alias, first noting the adapter's own (`aliasToRestore`) so
    /// that `stop` can put it back: gattd leaves the adapter named as it found it.
    private func setAlias() {
        guard let alias, let adapterPath else { return }
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: Freedesktop.properties, member: Freedesktop.getAll,
            arguments: [.string(BlueZNames.adapter)]
        ) { [weak self] result in
            guard let self, adapterPath == self.adapterPath else { return }
            if aliasToRestore == nil, case .success(let reply) = result,
                let properties = (try? reply.arguments())?.first,
                let current = properties.variantDictionaryValue("Alias")?.asString, current != alias
            {
                // An alias equal to the name is bluetoothd's default: restore that with "".
                aliasToRestore = current == properties.variantDictionaryValue("Name")?.asString ? "" : current
            }
            writeAlias(alias, on: adapterPath) { [logger] error in
                if let error {
                    logger.warning(
                        "could not set the adapter alias", metadata: ["alias": "\(alias)", "error": "\(error)"])
                } else {
                    logger.info(
                        "adapter alias set; phones show it as the device name after connecting",
                        metadata: ["alias": "\(alias)", "adapter": "\(adapterPath.elements.last ?? "")"])
                }
            }
        }
    }

    private func writeAlias(_ alias: String, on path: ObjectPath, done: @escaping (DBusError?) -> Void) {
        connection.call(
            destination: BlueZNames.service, path: path, interface: Freedesktop.properties, member: "Set",
            arguments: [.string(BlueZNames.adapter), .string("Alias"), .variant(.string(alias))], timeout: .seconds(1)
        ) { result in
            if case .failure(let error) = result { done(error) } else { done(nil) }
        }
    }

    // MARK: - Shutdown

    /// Unregisters every advertisement (bounded by a 1 s timeout each), removes the
    /// objects from the bus, then calls `completion`.
    public func stop(completion: @escaping () -> Void) {
        let path = adapterPath
        let active = slots.filter { $0.state == .advertising }
        stopped = true
        forgetTimers()
        let restore = path != nil ? aliasToRestore : nil
        var pending = active.count + (restore == nil ? 0 : 1)
        let finish = { [unowned self] in
            for slot in self.slots { self.connection.unexport(slot.exported.path) }
            self.connection.removeObjectManager(at: Self.rootPath)
            completion()
        }
        guard let path, pending > 0 else {
            finish()
            return
        }
        if let restore {
            writeAlias(restore, on: path) { [logger] error in
                if let error {
                    logger.warning("could not restore the adapter alias", metadata: ["error": "\(error)"])
                } else {
                    logger.info(
                        "adapter alias restored",
                        metadata: ["alias": "\(restore.isEmpty ? "(the adapter's name)" : restore)"])
                }
                pending -= 1
                if pending == 0 { finish() }
            }
        }
        for slot in active {
            slot.state = .waitingForAdapter
            connection.call(
                destination: BlueZNames.service, path: path, interface: BlueZNames.advertisingManager,
                member: "UnregisterAdvertisement", arguments: [.objectPath(slot.exported.path)], timeout: .seconds(1)
            ) { [unowned self] result in
                if case .failure(let error) = result {
                    self.logger.warning("could not unregister advertisement", metadata: self.metadata(slot).merging(["error": "\(error)"]) { $1 })
                } else {
                    self.logger.info("advertisement unregistered", metadata: self.metadata(slot))
                }
                pending -= 1
                if pending == 0 { finish() }
            }
        }
    }
}
