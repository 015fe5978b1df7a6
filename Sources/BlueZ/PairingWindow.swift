// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// When centrals may pair with the board (`security.pairable`), kept on the adapter's
/// `Pairable` and `PairableTimeout` (docs/security.md).
///
/// - `always`: `Pairable` true, no timeout. `never`: `Pairable` false.
/// - `window`: open for the configured seconds from gattd's start and from every
///   `open(seconds:)` (`gattctl pairing open`), closed after. While open, the adapter gets
///   `Pairable` true with `PairableTimeout` set to the seconds left, so bluetoothd closes it
///   on time even if gattd is killed; gattd's own timer closes it too.
/// - The adapter's `Pairable` and `PairableTimeout` as gattd first found them (per adapter,
///   read before gattd's first change) are put back by `stop`, also after bluetoothd
///   restarted in between.
/// - With `Pairable` false the kernel refuses a central that asks to bond; the agent also
///   refuses any pairing while closed (`isOpen`), bonding or not.
public final class PairingWindow {
    public let policy: SecurityDefinition.Pairable
    /// Called when the window opens or closes: open, and the seconds left (nil: no limit).
    public var onChange: ((_ open: Bool, _ secondsLeft: Int?) -> Void)?

    private let connection: BusConnection
    /// Answers about an adapter from before a change of bluetoothd or the adapter are
    /// ignored (`BlueZSession.generation`).
    private let session: BlueZSession
    private let logger: Logger
    /// The window's time and its closing timer: the loop's in the daemon, a manual clock in tests.
    private let clock: LoopClock
    /// When the window closes (window policy); nil when closed or for always/never.
    private var deadline: ContinuousClock.Instant?
    /// Cancels the closing timer while the window is open.
    private var cancelClose: (() -> Void)?
    /// The adapter the window goes on, as `adapterAvailable` was told.
    private var adapterPath: ObjectPath?
    /// `Pairable`, `PairableTimeout` as found on the adapter, once read.
    private var found: (pairable: Bool, timeout: UInt32)?
    /// What each adapter had when gattd first saw it. bluetoothd stores `PairableTimeout`
    /// with the adapter's settings, so after bluetoothd restarts the adapter may show what
    /// gattd set; the first reading is what gets put back.
    private var firstFound: [String: (pairable: Bool, timeout: UInt32)] = [:]
    /// The adapter's settings could not be read: the window goes on the adapter all the
    /// same (fail closed: a closed window is `Pairable` false), and `stop` puts nothing back.
    private var foundUnknown = false
    /// Set by `stop`: answers still on their way are dropped.
    private var stopped = false

    public init(
        policy: SecurityDefinition.Pairable, connection: BusConnection, session: BlueZSession, loop: EventLoop,
        logger: Logger, clock: LoopClock? = nil
    ) {
        self.policy = policy
        self.connection = connection
        self.session = session
        self.clock = clock ?? .loop(loop)
        self.logger = logger
    }

    /// Starts the first window (window policy): it counts from gattd's start, adapter or not.
    public func start() {
        if case .window(let seconds) = policy { open(seconds: seconds, reason: "gattd started") }
    }

    /// Whether a central may pair now.
    public var isOpen: Bool {
        switch policy {
        case .always: true
        case .never: false
        case .window: deadline.map { clock.now() < $0 } ?? false
        }
    }

    /// Whole seconds until the window closes (rounded up); nil when closed or unlimited.
    public var secondsLeft: Int? {
        guard case .window = policy, let deadline else { return nil }
        let left = clock.now().duration(to: deadline)
        guard left > .zero else { return nil }
        let (seconds, attoseconds) = left.components
        return Int(seconds) + (attoseconds > 0 ? 1 : 0)
    }

    /// Opens the window for `seconds` from now (`gattctl pairing open`). Refused (with the
    /// reason) when the policy is `always` or `never`.
    public func open(seconds: Int) -> String? {
        switch policy {
        case .always: return "pairing is always open (security.pairable is \"always\")"
        case .never: return "pairing is never open (security.pairable is \"never\")"
        case .window:
            open(seconds: seconds, reason: "asked over the control API")
            return nil
        }
    }

    private func open(seconds: Int, reason: String) {
        let deadline = clock.now().advanced(by: .seconds(seconds))
        self.deadline = deadline
        cancelClose?()
        cancelClose = clock.at(deadline) { [unowned self] in self.close() }
        logger.notice("pairing open", metadata: ["seconds": "\(seconds)", "reason": "\(reason)"])
        apply()
        onChange?(true, seconds)
    }

    private func close() {
        cancelClose = nil
        deadline = nil
        logger.notice("pairing closed")
        apply()
        onChange?(false, nil)
    }

    /// The session chose `path` (`Pairing` says so): read what the adapter has, then set
    /// what the policy says; `found` runs once the adapter's settings are read (or could
    /// not be). Register the agent only then: bluetoothd makes an adapter pairable when a
    /// default agent appears, and that is not how gattd found it.
    public func adapterAvailable(path: ObjectPath, found foundCompletion: @escaping () -> Void = {}) {
        let attempt = session.generation
        adapterPath = path
        found = nil
        foundUnknown = false
        if let known = firstFound[path.rawValue] {
            found = known
            apply()
            foundCompletion()
            return
        }
        connection.call(
            destination: BlueZNames.service, path: path, interface: Freedesktop.properties, member: Freedesktop.getAll,
            arguments: [.string(BlueZNames.adapter)]
        ) { [weak self] result in
            guard let self, !self.stopped, self.session.isCurrent(attempt), self.adapterPath == path else { return }
            defer { foundCompletion() }
            switch result {
            case .success(let reply):
                let properties = (try? reply.arguments())?.first
                let found = (
                    pairable: properties?.variantDictionaryValue("Pairable")?.asBool ?? false,
                    timeout: properties?.variantDictionaryValue("PairableTimeout")?.asUInt32 ?? 0
                )
                self.found = found
                self.firstFound[path.rawValue] = found
                self.apply()
            case .failure(let error):
                self.logger.error(
                    "cannot read the adapter's Pairable; it follows the pairing window all the same and is not put back when gattd stops",
                    metadata: ["error": "\(error.name): \(error.message)", "open": "\(self.isOpen)"])
                self.foundUnknown = true
                self.apply()
            }
        }
    }

    /// gattd's agent became bluetoothd's default agent. bluetoothd (with main.conf's
    /// `AlwaysPairable` off, its default) then makes the adapter pairable, whatever gattd
    /// set before: the window's state goes on the adapter again, so a closed window stays
    /// closed after bluetoothd restarts.
    public func agentRegistered() {
        guard adapterPath != nil, found != nil || foundUnknown else { return }
        logger.info("pairing agent registered; the adapter's Pairable follows the window again", metadata: ["open": "\(isOpen)"])
        apply()
    }

    public func adapterGone() {
        adapterPath = nil
        found = nil
        foundUnknown = false
    }

    /// Sets `Pairable`/`PairableTimeout` for the current state (once the found values are known).
    private func apply() {
        guard let adapterPath, found != nil || foundUnknown else { return }
        if isOpen {
            set(adapterPath, "PairableTimeout", .uint32(UInt32(clamping: secondsLeft ?? 0)))
            set(adapterPath, "Pairable", .bool(true))
        } else {
            set(adapterPath, "Pairable", .bool(false))
        }
    }

    private func set(
        _ path: ObjectPath, _ name: String, _ value: DBusValue, timeout: Duration? = nil,
        completion: (() -> Void)? = nil
    ) {
        connection.call(
            destination: BlueZNames.service, path: path, interface: Freedesktop.properties, member: "Set",
            arguments: [.string(BlueZNames.adapter), .string(name), .variant(value)], timeout: timeout
        ) { [logger] result in
            if case .failure(let error) = result {
                logger.error(
                    "cannot set the adapter's \(name)",
                    metadata: ["value": "\(value)", "error": "\(error.name): \(error.message)"])
            }
            completion?()
        }
    }

    /// Puts back the adapter's `Pairable` and `PairableTimeout` as found (bounded), then
    /// `completion`.
    public func stop(completion: @escaping () -> Void) {
        stopped = true
        cancelClose?()
        cancelClose = nil
        guard let adapterPath, let found else { return completion() }
        self.found = nil
        logger.info(
            "restoring the adapter's pairing settings",
            metadata: ["pairable": "\(found.pairable)", "pairable.timeout": "\(found.timeout)"])
        // Timeout first: setting Pairable true starts bluetoothd's timer with the timeout it has.
        set(adapterPath, "PairableTimeout", .uint32(found.timeout), timeout: .seconds(1)) { [unowned self] in
            self.set(adapterPath, "Pairable", .bool(found.pairable), timeout: .seconds(1), completion: completion)
        }
    }
}
