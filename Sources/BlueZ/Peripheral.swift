// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import DaemonCore
public import Logging
public import Mainloop

/// gattd's BlueZ side, assembled in one place: the session that watches bluetoothd, the
/// GATT application served through `service`, the registrar, the advertiser, the central
/// watch and, when the definition pairs, the pairing agent and window, all on one
/// connection and following the session in one order (`follow`). The daemon and the test
/// fixtures build it the same way; what differs is only the clock of the back-offs and the
/// pairing window (`clock`: the loop's by default, a manual one in tests).
public final class Peripheral {
    /// bluetoothd as gattd sees it: the owner of `org.bluez`, the adapter, its signals.
    public let session: BlueZSession
    public let application: GattApplication
    public let registrar: BlueZRegistrar
    public let advertiser: Advertiser
    /// Centrals connecting and the adapter's power.
    public let centrals: CentralWatch
    /// The pairing agent (exported) and window; nil when the definition does not pair.
    public let agent: PairingAgent?
    public let window: PairingWindow?
    private var following = false

    /// Builds and exports the BlueZ side: the GATT tree of `served` (the configuration with
    /// what the daemon adds to it, such as channels' PSM characteristics), the
    /// advertisements and the security of `configuration`. `remembered`: the handles
    /// bluetoothd gave the attributes before. `kernel`: for naming a known cause of a refusal.
    /// - Throws: when an object cannot be exported.
    public init(
        configuration: Configuration, served: Configuration, service: RequestService, connection: BusConnection,
        preferredAdapter: String?, loop: EventLoop, logger: Logger, clock: LoopClock? = nil,
        remembered: AttributeHandles = AttributeHandles(), kernel: KernelRelease? = nil
    ) throws(DBusError) {
        session = BlueZSession(
            connection: connection, preferredAdapter: preferredAdapter, loop: loop, logger: logger, clock: clock)
        application = try GattApplication(
            configuration: served, service: service, connection: connection, session: session, logger: logger,
            remembered: remembered)
        registrar = BlueZRegistrar(
            connection: connection, session: session, application: application, loop: loop, logger: logger,
            clock: clock)
        advertiser = try Advertiser(
            configuration: configuration, connection: connection, session: session, loop: loop, logger: logger,
            clock: clock)
        registrar.kernel = kernel
        advertiser.kernel = kernel
        centrals = CentralWatch(connection: connection, session: session, logger: logger)
        let security = configuration.security
        if security.pairs {
            let agent = PairingAgent(mode: security.pairing, connection: connection, session: session, logger: logger)
            try agent.start()
            self.agent = agent
            window = PairingWindow(
                policy: security.pairable, connection: connection, session: session, loop: loop, logger: logger,
                clock: clock)
        } else {
            agent = nil
            window = nil
        }
    }

    /// Adds the session's observers, once, in the one order everything that follows
    /// bluetoothd hears its events: `pairing` (the pairing window reads the adapter's
    /// settings before the agent registers); the advertiser; the central watch; `daemon`
    /// (the executable's own reaction); the registrar last, once the others have followed
    /// the adapter. The GATT objects and the advertisements need no observer: they trust
    /// the session's owner, set before anyone is told. Call it before `start`.
    public func follow(pairing: BlueZSession.Observer? = nil, daemon: BlueZSession.Observer? = nil) {
        precondition(!following, "the session's observers are added once")
        following = true
        if let pairing { session.observe(pairing) }
        session.observe { [unowned advertiser] in advertiser.handle($0) }
        session.observe { [unowned centrals] in centrals.handle($0) }
        if let daemon { session.observe(daemon) }
        session.observe { [unowned registrar] in registrar.handle($0) }
    }

    /// Starts watching for bluetoothd; what follows comes from the session's events.
    public func start() {
        session.start()
    }

    /// Stops following bluetoothd and unregisters the advertisements and the application
    /// from the adapter in use, at once (each bounded by a 1 s call timeout, so a bluetoothd
    /// that never answers costs one timeout); `completion` once both answered.
    public func stop(completion: @escaping () -> Void) {
        session.stop()
        var pending = 2
        let finished = {
            pending -= 1
            if pending == 0 { completion() }
        }
        advertiser.stop(completion: finished)
        registrar.stop(completion: finished)
    }
}
