// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import Control
import ControlAPI
import DBusKit
import DaemonCore
import Doctor
import Glibc
import Logging
import Mainloop
import SystemCalls
import SystemdKit

/// Wires the modules together and runs the event loop until SIGTERM or SIGINT; SIGHUP
/// reloads the configuration (Daemon+Reload.swift).
final class Daemon {
    let loop: EventLoop
    let connection: BusConnection
    /// The database, persistence, notifier, hooks and value sources of the configuration
    /// served: the service's (one runtime, never a copy); replaced when a reload changes
    /// the GATT tree (`factory`, `service.serve`).
    var runtime: Runtime { service.runtime }
    let factory: RuntimeFactory
    /// The configuration being served, and where it is read again on SIGHUP.
    var configuration: Configuration
    let configPath: String
    /// DaemonCore's read/write/notify pipeline; BlueZ and Control call it.
    let service: RequestService
    /// The BlueZ side: session, GATT application, registrar, advertiser, central watch,
    /// pairing agent and window, assembled once (`Peripheral`).
    let peripheral: Peripheral
    var application: GattApplication { peripheral.application }
    var registrar: BlueZRegistrar { peripheral.registrar }
    var advertiser: Advertiser { peripheral.advertiser }
    /// Centrals connecting and the adapter's power, for the control API's events.
    var centrals: CentralWatch { peripheral.centrals }
    /// org.gattd.Manager1: the control API for programs on the board (gattctl).
    let control: ControlManager
    /// The pairing agent, the pairing window and bondedOnly (`configuration.security`).
    let security: Pairing
    /// The definition's L2CAP channels (Daemon+Channels.swift); restart-only.
    let channels: ChannelServer
    let logger: Logger
    var exitCode: Int32 = 0
    /// systemd's sd_notify (READY=1, STATUS=, ...); not the runtime's `notifier`, which is GATT's.
    let systemd = SystemdNotifier()
    /// What systemd has been told and what it waits for; `perform` carries out its actions.
    var readiness = ReadinessMachine()
    private var signalWatches: [SignalWatch] = []
    private var watchdogTimer: LoopTimer?
    /// Bounds the wait for advertisements before READY=1 (the adapter may never offer
    /// `LEAdvertisingManager1`); armed and cancelled when `readiness` says so.
    private var advertisementWait: LoopTimer?
    /// How long READY=1 waits for bluetoothd's answers about advertisements once the
    /// application is registered.
    static let advertisementReadyTimeout: Duration = .seconds(5)

    init(
        configuration: Configuration, configPath: String, adapter: String?, stateDirectory: String,
        loop: EventLoop, connection: BusConnection, logger: Logger, controlBusName: String = ControlNames.busName
    ) throws(DBusError) {
        self.loop = loop
        self.connection = connection
        self.logger = logger
        self.configuration = configuration
        self.configPath = configPath
        factory = RuntimeFactory(loop: loop, state: .directory(stateDirectory), logger: logger)
        channels = ChannelServer(definitions: configuration.channels, loop: loop, logger: logger)
        let served = Self.openChannels(
            configuration, server: channels, psmFile: ChannelPSMFile(directory: stateDirectory), logger: logger)
        service = factory.makeService(served).service
        peripheral = try Peripheral(
            configuration: configuration, served: served, service: service, connection: connection,
            preferredAdapter: adapter, loop: loop, logger: logger,
            remembered: service.runtime.persistence?.savedHandles ?? AttributeHandles(),
            kernel: DoctorProbe.kernelRelease(environment: LoggingBootstrap.processEnvironment()))
        let centrals = peripheral.centrals
        service.centralAddress = { [unowned centrals] device in centrals.address(device: device) }
        channels.devicePath = { [unowned centrals] address, type in centrals.device(address: address, addressType: type) }
        security = Pairing(definition: configuration.security, peripheral: peripheral, loop: loop, logger: logger)
        control = ControlManager(
            configuration: served, service: service,
            port: ControlPort(peripheral, security: configuration.security, pairing: security), connection: connection,
            version: gattdVersion, logger: logger)
        control.busName = controlBusName
        control.channels = configuration.channels.isEmpty ? nil : channels
        channels.takers = { [unowned control] channel in control.channelHandoff(channel) }
        channels.onEvent = { [unowned control] event in control.channelEvent(event) }
        application.onCentralSubscription = { [unowned control] attribute, device, subscribed in
            control.centralSubscriptionEvent(attribute, device: device, subscribed: subscribed)
        }
    }

    static func run(
        configuration: Configuration, configPath: String, adapter: String?, stateDirectory: String,
        logLevel: Logger.Level, controlBusName: String = ControlNames.busName
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
        // Asked here, not inside the log call: its metadata is not evaluated below info.
        let slice = requestSchedulerSlice()
        logger.info(
            "starting",
            metadata: ["config": "\(configPath)", "bus.name": "\(connection.uniqueName)", "sched.slice": "\(slice)"])
        let daemon: Daemon
        do throws(DBusError) {
            daemon = try Daemon(
                configuration: configuration, configPath: configPath, adapter: adapter,
                stateDirectory: stateDirectory, loop: loop, connection: connection, logger: logger,
                controlBusName: controlBusName)
        } catch {
            logger.critical("cannot export the application", metadata: ["error": "\(error.name): \(error.message)"])
            return 1
        }
        daemon.start()
        loop.run()
        return daemon.exitCode
    }

    /// Asks for gattd's scheduler slice (`SchedulerSlice`) and says what came of it, for the
    /// "starting" line: `1000us`, or why the kernel's default stays.
    static func requestSchedulerSlice() -> String {
        do throws(SystemCallError) {
            switch try SchedulerSlice.request(nanoseconds: SchedulerSlice.gattdNanoseconds) {
            case .set(let nanoseconds): return "\(nanoseconds / 1000)us"
            case .unsupported: return "kernel default (custom slices need Linux 6.12)"
            case .otherPolicy(let policy): return "kernel default (scheduling policy \(policy))"
            }
        } catch {
            return "kernel default (\(error))"
        }
    }

    func start() {
        for signo in [SIGTERM, SIGINT] {
            signalWatches.append(loop.onSignal(signo) { [unowned self] in self.shutdown() })
        }
        signalWatches.append(loop.onSignal(SIGHUP) { [unowned self] in self.reload() })
        application.onHandles = { [unowned self] handles in self.runtime.persistence?.recordHandles(handles) }
        registrar.onStateChange = { [unowned self] state in
            self.control.registrationChanged(state)
            self.perform(self.readiness.settlementChanged(self.registration))
        }
        advertiser.onSettled = { [unowned self] in self.perform(self.readiness.settlementChanged(self.registration)) }
        // Everything that follows bluetoothd hears the session's events in the peripheral's
        // one order; the pairing agent and window, and the daemon, where it puts them.
        peripheral.follow(
            pairing: { [unowned security] in security.handle($0) }, daemon: { [unowned self] in self.adapterChanged($0) })
        centrals.onEvent = { [unowned self] event in
            self.control.centralEvent(event)
            if case .connected(let device, let address, _, _) = event {
                self.security.centralConnected(device: device, address: address, centrals: self.centrals)
            }
        }
        centrals.onNotifySocketModel = { [unowned self] model in self.application.notifySocketModel = model }
        security.onEvent = { [unowned control] in control.pairingEvent($0) }
        security.start(centrals: centrals)
        advertiser.onStateChange = { [unowned self] in self.control.advertisementEvent(id: $0, state: $1) }
        if let interval = systemd.watchdogInterval {
            // Pinged from the loop itself: a wedged loop stops the pings and systemd restarts us.
            watchdogTimer = loop.timer(after: interval / 2, repeating: interval / 2) { [unowned self] in
                self.notify { try self.systemd.watchdog() }
            }
        }
        connection.onDisconnected = { [unowned self] in
            self.logger.critical("lost the system bus connection")
            self.exitCode = 1
            self.loop.stop()
        }
        // Saved on/off states apply before the adapter is known, so a stopped
        // advertisement is never registered; the control API is served from here on.
        control.restoreAdvertisementStates()
        control.start()
        peripheral.start()
        runtime.start()
    }

    /// The control API hears of the adapter; without one, nobody is subscribed any more.
    private func adapterChanged(_ event: BlueZSession.Event) {
        switch event {
        case .adapterAvailable(let adapter):
            control.adapterEvent(adapter: adapter.name, state: "present")
        case .adapterGone, .vanished:
            // No bluetoothd or no adapter: nobody is subscribed any more (timers stop,
            // queues empty, and `gattctl list` shows no listeners that do not exist).
            let ended = runtime.database.clearSubscriptions()
            if !ended.isEmpty {
                logger.info(
                    "subscriptions ended with the adapter", metadata: ["gatt.ids": "\(ended.joined(separator: ","))"])
            }
            control.adapterEvent(adapter: nil, state: "gone")
        case .absent, .appeared, .noAdapter, .adapterProperties, .powered, .interfacesAdded, .interfacesRemoved,
            .deviceChanged:
            break
        }
    }

    /// Where the registrar and the advertiser stand, as `readiness` needs it.
    var registration: ReadinessMachine.Registration {
        let state = registrar.state
        guard state.isSettled else { return .unsettled }
        guard case .registered = state else { return .settled }
        return .registered(advertisementsSettled: advertiser.isSettled)
    }

    /// Carries out what `readiness` asked for, in order.
    func perform(_ actions: [ReadinessMachine.Action]) {
        for action in actions {
            switch action {
            case .ready(.current):
                notify { try self.systemd.ready(status: self.statusText(self.registrar.state)) }
            case .ready(.text(let status)):
                notify { try self.systemd.ready(status: status) }
            case .status:
                notify { try self.systemd.status(self.statusText(self.registrar.state)) }
            case .reloading:
                notify { try self.systemd.reloading() }
                reloadConfiguration()
            case .reloadAgain:
                reload()
            case .stopping:
                stop()
            case .armAdvertisementWait:
                advertisementWait = loop.timer(after: Self.advertisementReadyTimeout) { [unowned self] in
                    self.logger.warning("bluetoothd has not answered about the advertisements; reporting ready anyway")
                    self.advertisementWait = nil
                    self.perform(self.readiness.advertisementWaitExpired(self.registration))
                }
            case .cancelAdvertisementWait:
                advertisementWait?.cancel()
                advertisementWait = nil
            }
        }
    }

    /// systemd's STATUS= for a registrar state, e.g. `serving 3 services on hci0,
    /// advertising main`.
    func statusText(_ state: BlueZRegistrar.State) -> String {
        guard case .registered(let adapter) = state else { return state.summary }
        let advertising = advertiser.advertisingIDs
        return "serving \(plural(application.serviceCount, "service")) on \(adapter)"
            + (advertising.isEmpty ? "" : ", advertising \(advertising.joined(separator: ", "))")
    }

    func notify(_ send: () throws -> Bool) {
        do { _ = try send() } catch { logger.warning("sd_notify failed", metadata: ["error": "\(error)"]) }
    }

    /// SIGTERM or SIGINT: STOPPING=1, once (`readiness`), then `stop`.
    func shutdown() {
        perform(readiness.terminate())
    }

    /// Unregisters, then leaves the loop; bounded so systemd never has to kill us.
    private func stop() {
        logger.info("stopping")
        notify { try self.systemd.stopping() }
        runtime.stop()
        runtime.writeHooks.stop()
        channels.stop()
        flushState()
        let deadline = loop.timer(after: .milliseconds(1500)) { [unowned self] in
            self.logger.warning("unregistering took too long; exiting anyway")
            self.loop.stop()
        }
        // bluetoothd's comings and goings no longer matter; what is registered is unregistered
        // on the adapter in use. All at once (each bounded by a 1 s call timeout), so a
        // bluetoothd that never answers costs one timeout, not three.
        var pending = 2
        let finished = { [unowned self] in
            pending -= 1
            guard pending == 0 else { return }
            deadline.cancel()
            self.application.unexportAll()
            self.flushState()
            self.loop.stop()
        }
        peripheral.stop(completion: finished)
        security.stop(completion: finished)
    }

    /// Saves whatever is unsaved (timer values within their delay); cheap when nothing is.
    func flushState() {
        if case .failure(let error) = runtime.persistence?.flushNow() {
            logger.error("cannot save the state at shutdown", metadata: ["error": "\(error)"])
        }
    }
}
