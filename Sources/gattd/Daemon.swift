// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import DBusKit
import DaemonCore
import Glibc
import Logging
import Mainloop
import SystemdKit

/// Wires the modules together and runs the event loop until SIGTERM or SIGINT.
final class Daemon {
    let loop: EventLoop
    let connection: BusConnection
    let database: AttributeDatabase
    let persistence: Persistence
    let application: GattApplication
    let registrar: BlueZRegistrar
    let advertiser: Advertiser
    let updates: UpdateScheduler
    let logger: Logger
    var exitCode: Int32 = 0
    let notifier = SystemdNotifier()
    private var signalWatches: [SignalWatch] = []
    private var watchdogTimer: LoopTimer?
    private var readySent = false
    private var stopping = false

    init(
        configuration: Configuration, adapter: String?, stateDirectory: String, loop: EventLoop,
        connection: BusConnection, logger: Logger
    ) throws(DBusError) {
        self.loop = loop
        self.connection = connection
        self.logger = logger
        database = AttributeDatabase(configuration: configuration)
        persistence = Self.restoreState(
            configuration: configuration, database: database, directory: stateDirectory, loop: loop, logger: logger)
        application = try GattApplication(
            configuration: configuration, database: database, connection: connection, logger: logger)
        application.persistence = persistence
        Self.wireLiveValues(application, configuration: configuration, loop: loop, logger: logger)
        updates = UpdateScheduler(
            configuration: configuration, database: database, timers: .loop(loop), logger: logger,
            makeSource: UpdateScheduler.daemonSources(loop: loop, persistence: persistence))
        registrar = BlueZRegistrar(
            connection: connection, application: application, preferredAdapter: adapter, loop: loop, logger: logger)
        advertiser = try Advertiser(configuration: configuration, connection: connection, loop: loop, logger: logger)
    }

    /// Loads the saved state into `database` before anything is exported, so the first
    /// read after a restart returns the last acknowledged value.
    private static func restoreState(
        configuration: Configuration, database: AttributeDatabase, directory: String, loop: EventLoop, logger: Logger
    ) -> Persistence {
        let store = StateStore(directory: directory)
        do throws(StateStoreError) {
            try store.prepareDirectory()
        } catch {
            logger.error(
                "cannot create the state directory; writes to persistent values will be refused",
                metadata: ["error": "\(error)"])
        }
        // Persistence keeps at most one delayed save pending; its timer lives here.
        let pending = TimerSlot()
        let scheduling = PersistenceScheduling(
            afterIteration: { loop.afterIteration($0) },
            after: { delay, job in pending.timer = loop.timer(after: delay, job) })
        let persistence = Persistence(
            configuration: configuration, database: database, storage: store, scheduling: scheduling, logger: logger)
        logger.info("state", metadata: ["path": "\(store.path)"])
        persistence.restore(from: store.load())
        return persistence
    }

    /// Notification pacing, MTU learning and write hooks (issue 4).
    private static func wireLiveValues(
        _ application: GattApplication, configuration: Configuration, loop: EventLoop, logger: Logger
    ) {
        let mtu = MTUTracker()
        application.mtuTracker = mtu
        application.pacer = NotificationPacer(
            configuration: configuration, clock: .loop(loop), mtu: mtu, logger: logger,
            send: { [unowned application] attribute in application.sendValue(attribute) })
        application.writeHooks = WriteHookRunner(configuration: configuration, loop: loop, logger: logger)
    }

    static func run(
        configuration: Configuration, configPath: String, adapter: String?, stateDirectory: String,
        logLevel: Logger.Level
    ) -> Int32 {
        let backend = LoggingBootstrap.choose(environment: LoggingBootstrap.processEnvironment())
        LoggingSystem.bootstrap { _ in
            LoggingBootstrap.makeHandler(for: backend, identifier: "gattd", logLevel: logLevel)
        }
        var logger = Logger(label: "gattd")
        logger.logLevel = logLevel
        let loop: EventLoop
        let connection: BusConnection
        do {
            loop = try EventLoop()
        } catch {
            logger.critical("cannot create the event loop", metadata: ["error": "\(error)"])
            return 1
        }
        do throws(DBusError) {
            connection = try BusConnection.system(loop: loop)
        } catch {
            logger.critical("cannot connect to the system bus", metadata: ["error": "\(error.name): \(error.message)"])
            return 1
        }
        logger.info(
            "starting", metadata: ["config": "\(configPath)", "bus.name": "\(connection.uniqueName)"])
        let daemon: Daemon
        do throws(DBusError) {
            daemon = try Daemon(
                configuration: configuration, adapter: adapter, stateDirectory: stateDirectory, loop: loop,
                connection: connection, logger: logger)
        } catch {
            logger.critical("cannot export the application", metadata: ["error": "\(error.name): \(error.message)"])
            return 1
        }
        daemon.start()
        loop.run()
        return daemon.exitCode
    }

    func start() {
        for signo in [SIGTERM, SIGINT] {
            signalWatches.append(loop.onSignal(signo) { [unowned self] in self.shutdown() })
        }
        registrar.onStateChange = { [unowned self] state in self.stateChanged(state) }
        registrar.onAdapterChange = { [unowned self] path, owner in
            if let path, let owner, let objectPath = try? ObjectPath(path) {
                self.advertiser.adapterAvailable(path: objectPath, owner: owner)
            } else {
                self.advertiser.adapterGone()
            }
        }
        if let interval = notifier.watchdogInterval {
            // Pinged from the loop itself: a wedged loop stops the pings and systemd restarts us.
            watchdogTimer = loop.timer(after: interval / 2, repeating: interval / 2) { [unowned self] in
                self.notify { try self.notifier.watchdog() }
            }
        }
        connection.onDisconnected = { [unowned self] in
            self.logger.critical("lost the system bus connection")
            self.exitCode = 1
            self.loop.stop()
        }
        registrar.start()
        updates.start()
    }

    private func stateChanged(_ state: BlueZRegistrar.State) {
        let status: String
        if case .registered(let adapter) = state {
            status = "serving \(plural(application.serviceCount, "service")) on \(adapter)"
        } else {
            status = state.summary
        }
        if state.isSettled && !readySent {
            readySent = true
            notify { try self.notifier.ready(status: status) }
        } else {
            notify { try self.notifier.status(status) }
        }
    }

    private func notify(_ send: () throws -> Bool) {
        do { _ = try send() } catch { logger.warning("sd_notify failed", metadata: ["error": "\(error)"]) }
    }

    /// SIGTERM: unregister, then leave the loop; bounded so systemd never has to kill us.
    func shutdown() {
        guard !stopping else { return }
        stopping = true
        logger.info("stopping")
        notify { try self.notifier.stopping() }
        updates.stop()
        flushState()
        let deadline = loop.timer(after: .milliseconds(1500)) { [unowned self] in
            self.logger.warning("unregistering took too long; exiting anyway")
            self.loop.stop()
        }
        registrar.stop { [unowned self] in
            self.advertiser.stop {
                deadline.cancel()
                self.application.unexportAll()
                self.flushState()
                self.loop.stop()
            }
        }
    }

    /// Saves whatever is unsaved (timer values within their delay); cheap when nothing is.
    private func flushState() {
        if case .failure(let error) = persistence.flushNow() {
            logger.error("cannot save the state at shutdown", metadata: ["error": "\(error)"])
        }
    }
}

/// Holds the one pending delayed-save timer of `Persistence`.
private final class TimerSlot {
    var timer: LoopTimer?
}
