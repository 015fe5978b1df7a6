// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// Keeps gattd's application registered with whichever bluetoothd is running.
///
/// bluetoothd keeps registrations only in memory and tells nobody when it restarts or
/// loses an adapter (docs/bluez-contract.md §7). So this watches `NameOwnerChanged` for
/// `org.bluez` and `InterfacesAdded`/`InterfacesRemoved` on its object tree, picks the
/// adapter (the configured one, else the first with `GattManager1`), and registers again
/// whenever the adapter comes back. All calls are asynchronous: bluetoothd calls
/// `GetManagedObjects` back on this connection before it answers `RegisterApplication`.
public final class BlueZRegistrar {
    public enum State: Equatable, Sendable {
        /// Before the first answer about `org.bluez`.
        case starting
        case waitingForBlueZ
        /// `org.bluez` is present; listing its adapters.
        case discovering
        case waitingForAdapter(String?)
        case registering(adapter: String)
        case registered(adapter: String)
        case failed(adapter: String, reason: String)
    }

    public private(set) var state: State = .starting {
        didSet { if state != oldValue { onStateChange?(state) } }
    }
    public var onStateChange: ((State) -> Void)?
    /// Called with the adapter path and the `org.bluez` owner when an adapter is chosen,
    /// and with nil when bluetoothd or the adapter goes away (drives the `Advertiser`).
    public var onAdapterChange: ((_ path: String?, _ owner: String?) -> Void)?

    private let connection: BusConnection
    private let application: GattApplication
    private let preferredAdapter: String?
    /// The retry back-off's timers: the loop's in the daemon, a manual clock in tests.
    private let clock: LoopClock
    private let logger: Logger
    private var subscriptions: [SignalSubscription] = []
    /// Bumped whenever BlueZ or the adapter changes, so replies to older attempts are ignored.
    private var generation = 0
    private var adapterPath: ObjectPath?
    /// Cancels the pending retry, if any.
    private var cancelRetry: (() -> Void)?
    private var retryDelay: Duration = .seconds(1)
    /// The generation of the `RegisterApplication` call awaiting its reply, if any.
    private var registrationInFlight: Int?
    /// Tree swaps asked for while a `RegisterApplication` was in flight; they run once its
    /// reply is in (see `replaceApplication`).
    private var queuedRebuilds: [() -> Void] = []
    /// The kernel release, for naming a known cause of a refusal (`KnownProblems.cause`).
    public var kernel: KernelRelease?

    public init(
        connection: BusConnection, application: GattApplication, preferredAdapter: String?,
        loop: EventLoop, logger: Logger, clock: LoopClock? = nil
    ) {
        self.connection = connection
        self.application = application
        self.preferredAdapter = preferredAdapter
        self.clock = clock ?? .loop(loop)
        self.logger = logger
    }

    /// The adapter name (`hci0`) currently used, if any.
    public var adapterName: String? { adapterPath.map { String($0.rawValue.split(separator: "/").last ?? "") } }

    public func start() {
        subscriptions.append(
            connection.subscribe(
                sender: Freedesktop.bus, path: Freedesktop.busPath,
                interface: Freedesktop.busInterface, member: Freedesktop.nameOwnerChanged, arg0: BlueZNames.service
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count == 3,
                    let newOwner = arguments[2].asString
                else { return }
                if newOwner.isEmpty { self.blueZVanished() } else { self.blueZAppeared(owner: newOwner) }
            })
        // InterfacesAdded carries a{sa{sv}}, InterfacesRemoved as: either way the interface names.
        for member in [Freedesktop.interfacesAdded, Freedesktop.interfacesRemoved] {
            subscriptions.append(
                connection.subscribe(
                    sender: BlueZNames.service, path: BlueZNames.root, interface: Freedesktop.objectManager,
                    member: member, arg0: nil
                ) { [unowned self] message in
                    guard message.sender == self.application.trustedSender,
                        let arguments = try? message.arguments(), arguments.count == 2,
                        let path = arguments[0].asObjectPath?.rawValue
                    else { return }
                    if member == Freedesktop.interfacesAdded {
                        let interfaces = arguments[1].dictionaryEntries?.compactMap { $0.key.asString } ?? []
                        self.interfacesAdded(path: path, interfaces: interfaces)
                    } else {
                        self.interfacesRemoved(path: path, interfaces: arguments[1].asStringArray ?? [])
                    }
                })
        }
        logger.info("waiting for org.bluez")
        connection.call(
            destination: Freedesktop.bus, path: Freedesktop.busPath,
            interface: Freedesktop.busInterface, member: Freedesktop.getNameOwner, arguments: [.string(BlueZNames.service)]
        ) { [unowned self] result in
            guard self.state == .starting else { return }
            if case .success(let reply) = result, let owner = (try? reply.arguments())?.first?.asString {
                self.blueZAppeared(owner: owner)
            } else {
                self.state = .waitingForBlueZ
            }
        }
    }

    // MARK: - BlueZ presence

    private func blueZAppeared(owner: String) {
        guard owner != application.trustedSender else { return }
        generation += 1
        application.trustedSender = owner
        adapterPath = nil
        cancelRetry?()
        runQueuedRebuilds()
        logger.info("org.bluez is on the bus", metadata: ["bluez.owner": "\(owner)"])
        state = .discovering
        findAdapter()
    }

    private func blueZVanished() {
        guard application.trustedSender != nil || state == .starting else { return }
        generation += 1
        application.trustedSender = nil
        adapterPath = nil
        cancelRetry?()
        logger.warning("org.bluez left the bus; registering again when it returns")
        onAdapterChange?(nil, nil)
        runQueuedRebuilds()
        state = .waitingForBlueZ
    }

    private func findAdapter() {
        let attempt = generation
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.root,
            interface: Freedesktop.objectManager, member: Freedesktop.getManagedObjects, arguments: []
        ) { [unowned self] result in
            guard attempt == self.generation else { return }
            switch result {
            case .success(let reply):
                let objects = (try? reply.arguments())?.first?.dictionaryEntries ?? []
                let candidates = objects.compactMap { entry -> String? in
                    guard let path = entry.key.asObjectPath?.rawValue,
                        let interfaces = entry.value.dictionaryEntries?.compactMap({ $0.key.asString }),
                        interfaces.contains(BlueZNames.gattManager)
                    else { return nil }
                    return path
                }
                self.choose(from: candidates)
            case .failure(let error):
                self.logger.error(
                    "could not list BlueZ objects", metadata: ["error": "\(error.name): \(error.message)"])
                self.scheduleRetry { self.findAdapter() }
            }
        }
    }

    private func choose(from candidates: [String]) {
        let chosen: String?
        if let preferredAdapter {
            chosen = candidates.first { $0.hasSuffix("/" + preferredAdapter) }
        } else {
            chosen = candidates.sorted().first
        }
        guard let chosen else {
            logger.warning(
                "no usable adapter yet",
                metadata: ["adapter": "\(preferredAdapter ?? "any")", "available": "\(candidates.joined(separator: ","))"])
            state = .waitingForAdapter(preferredAdapter)
            return
        }
        adapterPath = try? ObjectPath(chosen)
        onAdapterChange?(chosen, application.trustedSender)
        logger.info(
            "using adapter",
            metadata: ["adapter": "\(adapterName ?? chosen)", "chosen.by": "\(preferredAdapter == nil ? "first with GattManager1" : "configuration")"])
        register()
    }

    private func interfacesAdded(path: String, interfaces: [String]) {
        guard adapterPath == nil, interfaces.contains(BlueZNames.gattManager) else { return }
        if let preferredAdapter, !path.hasSuffix("/" + preferredAdapter) { return }
        logger.info("adapter appeared", metadata: ["bluez.path": "\(path)"])
        choose(from: [path])
    }

    private func interfacesRemoved(path: String, interfaces: [String]) {
        guard path == adapterPath?.rawValue,
            interfaces.contains(BlueZNames.gattManager) || interfaces.contains(BlueZNames.adapter)
        else { return }
        generation += 1
        adapterPath = nil
        cancelRetry?()
        logger.warning("adapter disappeared; registering again when it returns", metadata: ["bluez.path": "\(path)"])
        onAdapterChange?(nil, nil)
        runQueuedRebuilds()
        state = .waitingForAdapter(preferredAdapter)
    }

    // MARK: - Registration

    private func register() {
        guard let adapterPath, let name = adapterName else { return }
        let attempt = generation
        state = .registering(adapter: name)
        registrationInFlight = attempt
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.gattManager,
            member: "RegisterApplication",
            arguments: [.objectPath(application.rootPath), .variantDictionary([])]
        ) { [unowned self] result in
            if self.registrationInFlight == attempt { self.registrationInFlight = nil }
            guard attempt == self.generation else { return }
            if !self.queuedRebuilds.isEmpty {
                // A reload came while bluetoothd was reading the old tree: whatever it
                // answered, it holds that tree (or none). Swap it now, as replaceApplication
                // would have: unregister, rebuild, register once.
                let rebuilds = self.queuedRebuilds
                self.queuedRebuilds.removeAll()
                self.replaceApplication { for rebuild in rebuilds { rebuild() } }
                return
            }
            switch result.registered {
            case .success:
                self.registered(adapter: name)
            case .failure(let error):
                if error.name == "org.bluez.Error.Failed", self.application.fallBackToChosenHandles(after: error) {
                    self.register()
                    return
                }
                var reason = error.message
                var metadata: Logger.Metadata = ["adapter": "\(name)", "error": "\(error.name): \(error.message)"]
                let refusal = Refusal(subject: .application, errorName: error.name, message: error.message)
                if let cause = KnownProblems.cause(of: refusal, kernel: self.kernel, bluetoothd: nil) {
                    reason += "; " + KnownProblems.explanation(cause)
                    metadata["known.problem"] = "\(cause.problem.id)"
                }
                self.logger.error("bluetoothd refused the GATT application: \(reason)", metadata: metadata)
                self.state = .failed(adapter: name, reason: reason)
                if error.name == DBusError.Name.noReply {
                    self.scheduleRetry { self.register() }
                }
            }
        }
    }

    private func registered(adapter: String) {
        retryDelay = .seconds(1)
        logger.info(
            "GATT application registered",
            metadata: ["adapter": "\(adapter)", "services": "\(application.serviceCount)"])
        application.registered()
        state = .registered(adapter: adapter)
    }

    private func scheduleRetry(_ action: @escaping () -> Void) {
        let attempt = generation
        cancelRetry?()
        cancelRetry = clock.at(clock.now() + retryDelay) { [unowned self] in
            guard attempt == self.generation else { return }
            action()
        }
        retryDelay = min(retryDelay * 2, .seconds(30))
    }

    /// Swaps the application's tree (reload): unregisters it from bluetoothd, runs
    /// `rebuild` (which re-exports the objects), and registers it again on the same
    /// adapter. bluetoothd only reads the tree at `RegisterApplication` (docs/bluez-contract.md
    /// §1), so a changed tree needs this round trip; it sends Service Changed to
    /// connected centrals. When nothing is registered (no bluetoothd, no adapter yet)
    /// `rebuild` runs at once and the next registration uses the new tree.
    ///
    /// While a `RegisterApplication` is in flight, bluetoothd may already have read the
    /// old tree through `GetManagedObjects`; unregistering and registering again then
    /// would race with its answer (it could end holding the old tree, or two
    /// registrations). So the swap waits for that answer and then runs as above.
    public func replaceApplication(_ rebuild: @escaping () -> Void) {
        guard let adapterPath, let name = adapterName else {
            runQueuedRebuilds()
            rebuild()
            return
        }
        if registrationInFlight == generation {
            queuedRebuilds.append(rebuild)
            return
        }
        let wasRegistered: Bool
        switch state {
        case .registered, .registering: wasRegistered = true
        default: wasRegistered = false
        }
        generation += 1
        cancelRetry?()
        let attempt = generation
        state = .registering(adapter: name)
        guard wasRegistered else {
            rebuild()
            register()
            return
        }
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.gattManager,
            member: "UnregisterApplication", arguments: [.objectPath(application.rootPath)],
            timeout: .seconds(1)
        ) { [unowned self] result in
            if case .failure(let error) = result, error.name != BlueZError.doesNotExist {
                self.logger.warning(
                    "could not unregister before re-registering",
                    metadata: ["error": "\(error.name): \(error.message)"])
            }
            rebuild()
            // bluetoothd or the adapter changed meanwhile: the registrar registers the new tree when it is back.
            guard attempt == self.generation else { return }
            self.register()
        }
    }

    /// Nothing is registered any more (bluetoothd or the adapter left): the swaps waiting
    /// for a registration's answer apply at once, and the next registration uses the tree.
    private func runQueuedRebuilds() {
        let rebuilds = queuedRebuilds
        queuedRebuilds.removeAll()
        for rebuild in rebuilds { rebuild() }
    }

    /// Unregisters (best effort, bounded) and then calls `completion`.
    public func stop(completion: @escaping () -> Void) {
        generation += 1
        cancelRetry?()
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
        guard case .registered = state, let adapterPath else {
            completion()
            return
        }
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.gattManager,
            member: "UnregisterApplication", arguments: [.objectPath(application.rootPath)],
            timeout: .seconds(1)
        ) { [unowned self] result in
            if case .failure(let error) = result {
                self.logger.warning("could not unregister", metadata: ["error": "\(error.name): \(error.message)"])
            } else {
                self.logger.info("GATT application unregistered")
            }
            completion()
        }
    }
}

extension BlueZRegistrar.State {
    /// True once gattd knows where it stands: serving, refused, or waiting for BlueZ or an
    /// adapter. systemd's READY=1 waits for this, never for a pending answer.
    public var isSettled: Bool {
        switch self {
        case .starting, .discovering, .registering: return false
        case .waitingForBlueZ, .waitingForAdapter, .registered, .failed: return true
        }
    }

    /// The words for systemd's STATUS= and `gattctl status`.
    public var summary: String {
        switch self {
        case .starting: return "starting"
        case .waitingForBlueZ: return "waiting for org.bluez"
        case .discovering: return "looking for an adapter"
        case .waitingForAdapter(let name): return "waiting for adapter \(name ?? "with GattManager1")"
        case .registering(let adapter): return "registering on \(adapter)"
        case .registered(let adapter): return "serving on \(adapter)"
        case .failed(let adapter, let reason): return "bluetoothd refused the application on \(adapter): \(reason)"
        }
    }
}
