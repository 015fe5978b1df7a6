// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// Keeps gattd's application registered with whichever bluetoothd is running.
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
            runQueuedRebuilds()
            state = .discovering
        case .vanished:
            backoff.cancel()
            runQueuedRebuilds()
            state = .waitingForBlueZ
        case .noAdapter(let preferred):
            state = .waitingForAdapter(preferred)
        case .adapterGone:
            backoff.cancel()
            runQueuedRebuilds()
            state = .waitingForAdapter(session.preferredAdapter)
        case .adapterAvailable:
            backoff.cancel()
            register()
        case .adapterProperties, .powered, .interfacesAdded, .interfacesRemoved, .deviceChanged:
            break
        }
    }

    // MARK: - Registration

    private func register() {
        guard let adapter = session.adapter else { return }
        let name = adapter.name
        let attempt = self.attempt
        state = .registering(adapter: name)
        registrationInFlight = attempt
        connection.call(
            destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.gattManager,
            member: "RegisterApplication",
            arguments: [.objectPath(application.rootPath), .variantDictionary([])]
        ) { [unowned self] result in
            if self.registrationInFlight == attempt { self.registrationInFlight = nil }
            guard attempt == self.attempt else { return }
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
                if error.name == BlueZError.failed, self.application.fallBackToChosenHandles(after: error) {
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
                self.state = .failed(adapter: name, reason: reason, refusal: refusal)
                if error.name == DBusError.Name.noReply {
                    self.scheduleRetry { self.register() }
                }
            }
        }
    }

    private func registered(adapter: String) {
        backoff.succeeded()
        logger.info(
            "GATT application registered",
            metadata: ["adapter": "\(adapter)", "services": "\(application.serviceCount)"])
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
        let wasRegistered: Bool
        switch state {
        case .registered, .registering: wasRegistered = true
        default: wasRegistered = false
        }
        swaps += 1
        backoff.cancel()
        let attempt = self.attempt
        state = .registering(adapter: name)
        guard wasRegistered else {
            rebuild()
            register()
            return
        }
        connection.call(
            destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.gattManager,
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
            guard attempt == self.attempt else { return }
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
        swaps += 1
        backoff.cancel()
        guard case .registered = state, let adapterPath = session.adapter?.path else {
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
        case .failed(let adapter, let reason, _): return "bluetoothd refused the application on \(adapter): \(reason)"
        }
    }
}
