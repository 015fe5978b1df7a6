// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// Keeps gattd's applications (one per service, `GattApplication.groups`) registered with
/// whichever bluetoothd is running, each registered alone, so that a reload touches only
/// the services that changed.
///
/// bluetoothd keeps registrations only in memory (docs/bluez-contract.md §7). The
/// `BlueZSession` says when bluetoothd and an adapter are there; the registrar registers
/// whenever an adapter is available and tracks where that stands (`State`). Add
/// `handle(_:)` to the session's observers last, so that everything else has followed the
/// adapter before `RegisterApplication` goes out. All calls are asynchronous: bluetoothd
/// calls `GetManagedObjects` back on this connection before it answers
/// `RegisterApplication`.
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
        /// bluetoothd refused the application: the reason in plain words, and its answer as
        /// it came (what `gattd --doctor` matches against the known problems).
        case failed(adapter: String, reason: String, refusal: Refusal)
    }

    public private(set) var state: State = .starting {
        didSet { if state != oldValue { onStateChange?(state) } }
    }
    public var onStateChange: ((State) -> Void)?

    private let connection: BusConnection
    private let session: BlueZSession
    private let application: GattApplication
    /// The retries of a `RegisterApplication` that got no reply (`RetryBackoff`).
    private let backoff: RetryBackoff
    private let logger: Logger
    /// Counts this registrar's own swaps of the tree (and its stop): an answer to an
    /// `UnregisterApplication` of an earlier swap must not register a second time. Changes
    /// of bluetoothd and the adapter are the session's `generation`.
    private var swaps = 0
    /// The attempt of the `RegisterApplication` call awaiting its reply, if any.
    private var registrationInFlight: Attempt?
    /// Tree swaps asked for while a `RegisterApplication` was in flight; they run once its
    /// reply is in (see `replaceApplication`).
    private var queuedRebuilds: [() -> Void] = []
    /// The applications (roots) bluetoothd holds now, of this bluetoothd and adapter.
    private var registeredRoots = Set<ObjectPath>()
    /// The kernel release, for naming a known cause of a refusal (`KnownProblems.cause`).
    public var kernel: KernelRelease?

    /// The session's generation and this registrar's swap count when a call went out.
    private struct Attempt: Equatable {
        let generation: Int
        let swap: Int
    }

    public init(
        connection: BusConnection, session: BlueZSession, application: GattApplication, loop: EventLoop,
        logger: Logger, clock: LoopClock? = nil
    ) {
        self.connection = connection
        self.session = session
        self.application = application
        backoff = RetryBackoff(clock: clock ?? .loop(loop))
        self.logger = logger
    }

    /// The adapter name (`hci0`) currently used, if any.
    public var adapterName: String? { session.adapter?.name }

    private var attempt: Attempt { Attempt(generation: session.generation, swap: swaps) }

    // MARK: - BlueZ presence (from the session)

    /// Follows the session: registers when an adapter is available, waits otherwise.
    public func handle(_ event: BlueZSession.Event) {
        switch event {
        case .absent:
            state = .waitingForBlueZ
        case .appeared:
            backoff.cancel()
            registeredRoots.removeAll()
            runQueuedRebuilds()
            state = .discovering
        case .vanished:
            backoff.cancel()
            registeredRoots.removeAll()
            runQueuedRebuilds()
            state = .waitingForBlueZ
        case .noAdapter(let preferred):
            state = .waitingForAdapter(preferred)
        case .adapterGone:
            backoff.cancel()
            registeredRoots.removeAll()
            runQueuedRebuilds()
            state = .waitingForAdapter(session.preferredAdapter)
        case .adapterAvailable:
            backoff.cancel()
            registeredRoots.removeAll()
            register()
        case .adapterProperties, .powered, .interfacesAdded, .interfacesRemoved, .deviceChanged:
            break
        }
    }

    // MARK: - Registration

    /// Registers every application bluetoothd does not hold yet, all at once; the state
    /// is `registered` once every one is in, `failed` (with the first refusal) otherwise.
    /// One refused at the handles gattd asked for is registered again at handles
    /// bluetoothd chooses (`fallBackToChosenHandles`).
    private func register() {
        guard let adapter = session.adapter else { return }
        let name = adapter.name
        let attempt = self.attempt
        let roots = application.groupRoots.filter { !registeredRoots.contains($0) }
        guard !roots.isEmpty else {
            registered(adapter: name)
            return
        }
        state = .registering(adapter: name)
        registrationInFlight = attempt
        var pending = roots.count
        var refused: DBusError?
        var retryWithChosenHandles = false
        for root in roots {
            connection.call(
                destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.gattManager,
                member: "RegisterApplication", arguments: [.objectPath(root), .variantDictionary([])]
            ) { [unowned self] result in
                pending -= 1
                switch result.registered {
                case .success:
                    if attempt == self.attempt { self.registeredRoots.insert(root) }
                case .failure(let error):
                    if error.name == BlueZError.failed,
                        self.application.fallBackToChosenHandles(after: error, in: root)
                    {
                        retryWithChosenHandles = true
                    } else if refused == nil {
                        refused = error
                    }
                }
                guard pending == 0 else { return }
                self.registrationAnswered(attempt, adapter: name, refused: refused, retry: retryWithChosenHandles)
            }
        }
    }

    /// Every `RegisterApplication` of one `register()` is answered.
    private func registrationAnswered(_ attempt: Attempt, adapter name: String, refused: DBusError?, retry: Bool) {
        if registrationInFlight == attempt { registrationInFlight = nil }
        guard attempt == self.attempt else { return }
        if !queuedRebuilds.isEmpty {
            // A reload came while bluetoothd was reading the old tree: whatever it
            // answered, it holds that tree (or none). Swap it now, as replaceApplication
            // would have, replacing every application: the rebuilds in between were never
            // compared with what bluetoothd holds.
            let rebuilds = queuedRebuilds
            queuedRebuilds.removeAll()
            replaceApplication { for rebuild in rebuilds { rebuild() } }
            return
        }
        if retry && refused == nil {
            register()
            return
        }
        guard let error = refused else {
            registered(adapter: name)
            return
        }
        var reason = error.message
        var metadata: Logger.Metadata = ["adapter": "\(name)", "error": "\(error.name): \(error.message)"]
        let refusal = Refusal(subject: .application, errorName: error.name, message: error.message)
        if let cause = KnownProblems.cause(of: refusal, kernel: kernel, bluetoothd: nil) {
            reason += "; " + KnownProblems.explanation(cause)
            metadata["known.problem"] = "\(cause.problem.id)"
        }
        logger.error("bluetoothd refused the GATT application: \(reason)", metadata: metadata)
        state = .failed(adapter: name, reason: reason, refusal: refusal)
        if error.name == DBusError.Name.noReply {
            scheduleRetry { self.register() }
        }
    }

    private func registered(adapter: String) {
        backoff.succeeded()
        logger.info(
            "GATT application registered",
            metadata: [
                "adapter": "\(adapter)", "services": "\(application.serviceCount)",
                "applications": "\(application.groupRoots.count)",
            ])
        application.registered()
        state = .registered(adapter: adapter)
    }

    private func scheduleRetry(_ action: @escaping () -> Void) {
        let attempt = self.attempt
        backoff.retry { [unowned self] in
            guard attempt == self.attempt else { return }
            action()
        }
    }

    /// Swaps the application's tree (reload) with the least bluetoothd sees: unregisters
    /// the applications `leaving` names (default: all; `GattApplication.groupsLeaving`),
    /// runs `rebuild` (which re-exports the objects), and registers the applications
    /// bluetoothd does not hold then, on the same adapter. bluetoothd only reads a tree at
    /// `RegisterApplication` (docs/bluez-contract.md §1), so a changed service needs this
    /// round trip; bluetoothd sends connected centrals one Service Changed for each service
    /// it removes or adds, and none for the applications left alone. When nothing is
    /// registered (no bluetoothd, no adapter yet) `rebuild` runs at once and the next
    /// registration uses the new tree.
    ///
    /// While a `RegisterApplication` is in flight, bluetoothd may already have read the
    /// old tree through `GetManagedObjects`; unregistering and registering again then
    /// would race with its answer (it could end holding the old tree, or two
    /// registrations). So the swap waits for that answer and then replaces every
    /// application.
    public func replaceApplication(_ rebuild: @escaping () -> Void) {
        replaceApplication(leaving: nil, rebuild: rebuild)
    }

    /// `replaceApplication` unregistering only the applications `leaving` names.
    public func replaceApplication(leaving: (() -> [ObjectPath])?, rebuild: @escaping () -> Void) {
        guard let adapter = session.adapter else {
            runQueuedRebuilds()
            rebuild()
            return
        }
        let name = adapter.name
        if registrationInFlight == attempt {
            queuedRebuilds.append(rebuild)
            return
        }
        swaps += 1
        backoff.cancel()
        let attempt = self.attempt
        let roots = (leaving?() ?? application.groupRoots).filter { registeredRoots.contains($0) }
        let finish = { [unowned self] in
            rebuild()
            // bluetoothd or the adapter changed meanwhile: the registrar registers the new tree when it is back.
            guard attempt == self.attempt else { return }
            self.register()
        }
        guard !roots.isEmpty else {
            finish()
            return
        }
        state = .registering(adapter: name)
        unregister(roots, adapterPath: adapter.path) { [unowned self] in
            if attempt == self.attempt { self.registeredRoots.subtract(roots) }
            finish()
        }
    }

    /// Registers the application that holds service `id` again, alone (unregistered, then
    /// registered: bluetoothd reads its objects again and sends connected centrals Service
    /// Changed for that service only, and services joined to it by `includes`). While a
    /// `RegisterApplication` is in flight it waits for the answer and then replaces every
    /// application, as a reload does. False when no application holds `id`.
    @discardableResult
    public func reregister(service id: String) -> Bool {
        guard let root = application.groupRoot(containing: id) else { return false }
        replaceApplication(leaving: { [root] }, rebuild: {})
        return true
    }

    /// `UnregisterApplication` for each of `roots` at once (best effort, each bounded);
    /// `completion` once all answered.
    private func unregister(_ roots: [ObjectPath], adapterPath: ObjectPath, completion: @escaping () -> Void) {
        var pending = roots.count
        for root in roots {
            connection.call(
                destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.gattManager,
                member: "UnregisterApplication", arguments: [.objectPath(root)], timeout: .seconds(1)
            ) { [unowned self] result in
                if case .failure(let error) = result, error.name != BlueZError.doesNotExist {
                    self.logger.warning(
                        "could not unregister an application",
                        metadata: ["application": "\(root)", "error": "\(error.name): \(error.message)"])
                }
                pending -= 1
                if pending == 0 { completion() }
            }
        }
    }

    /// Nothing is registered any more (bluetoothd or the adapter left): the swaps waiting
    /// for a registration's answer apply at once, and the next registration uses the tree.
    private func runQueuedRebuilds() {
        let rebuilds = queuedRebuilds
        queuedRebuilds.removeAll()
        for rebuild in rebuilds { rebuild() }
    }

    /// Unregisters every application (best effort, bounded, at once) and then calls
    /// `completion`.
    public func stop(completion: @escaping () -> Void) {
        swaps += 1
        backoff.cancel()
        let roots = application.groupRoots.filter { registeredRoots.contains($0) }
        guard let adapterPath = session.adapter?.path, !roots.isEmpty else {
            completion()
            return
        }
        unregister(roots, adapterPath: adapterPath) { [unowned self] in
            self.registeredRoots.removeAll()
            self.logger.info("GATT application unregistered")
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
        case .failed(let adapter, let reason, _): return "bluetoothd refused the application on \(adapter): \(reason)"
        }
    }
}
