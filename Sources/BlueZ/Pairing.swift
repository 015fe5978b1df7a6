// SPDX-License-Identifier: MIT

public import BLEModel
public import DaemonCore
public import Logging
public import Mainloop

/// Pairing (docs/security.md): the agent, the pairing window, the passkey reaching a
/// person, and `bondedOnly`, carrying out what `PairingPolicy` decides with the pairing
/// agent and window the `Peripheral` built. Nothing here runs when `security.pairing` is
/// `none`, except `bondedOnly`, which needs no agent. What a person must see goes out as
/// `Event`s (the daemon hands them to the control API).
public final class Pairing {
    /// What the pairing reports for a person to see, in the order it happens.
    public enum Event: Equatable, Sendable {
        /// A passkey (six digits) to type in at the central `address` (`display-passkey`).
        case passkey(device: String, address: String, passkey: String)
        /// Six digits to compare, waiting for a decision (`numeric-comparison`).
        case confirmation(device: String, address: String, passkey: String)
        /// The pairing window opened or closed; `secondsLeft` nil when closed or unlimited.
        case window(open: Bool, secondsLeft: Int?)
    }

    public let definition: SecurityDefinition
    public let agent: PairingAgent?
    public let window: PairingWindow?
    private let policy: PairingPolicy
    private let loop: EventLoop
    private let logger: Logger
    /// The `onPasskey` program showing the current passkey, if one runs.
    private var passkeyProgram: ChildProcess?
    /// Numeric comparison: the confirmations waiting for a decision (nil in other modes).
    public let confirmations: PendingConfirmations?
    /// The `onConfirm` programs deciding, by address.
    private var confirmPrograms: [String: ChildProcess] = [:]
    /// Hears each `Event`; set before `start`.
    public var onEvent: ((Event) -> Void)?

    /// Carries out `definition` with the peripheral's pairing agent and window (nil when it
    /// does not pair).
    public init(definition: SecurityDefinition, peripheral: Peripheral, loop: EventLoop, logger: Logger) {
        self.definition = definition
        policy = PairingPolicy(definition)
        self.loop = loop
        self.logger = logger
        confirmations =
            definition.pairing == .numericComparison
            ? PendingConfirmations(timeout: .seconds(definition.confirmSeconds), clock: .loop(loop)) : nil
        agent = peripheral.agent
        window = peripheral.window
    }

    /// Reports the agent's passkeys and confirmations and the window's changes
    /// (`onEvent`), checks centrals as they are found, and starts the first pairing window.
    public func start(centrals: CentralWatch) {
        // Centrals connected before gattd (or a restarted bluetoothd) listed them: checked too.
        centrals.onFoundConnected = { [unowned self, unowned centrals] device, address in
            self.centralConnected(device: device, address: address, centrals: centrals)
        }
        guard let agent, let window else { return }
        agent.pairingAllowed = { [unowned window] in window.isOpen }
        agent.centralAddress = { [unowned centrals] device in centrals.address(device: device) }
        agent.onRegistered = { [unowned window] in window.agentRegistered() }
        agent.onEvent = { [unowned self, unowned centrals] event in
            switch event {
            case .passkey(let device, let address, let passkey):
                self.showPasskey(device: device, address: address, passkey: passkey, centrals: centrals)
            case .cancelled:
                self.stopPasskeyProgram()
                self.confirmations?.cancelAll(because: "bluetoothd cancelled the request")
            }
        }
        if confirmations != nil {
            agent.onConfirmation = { [unowned self] device, address, passkey, answer in
                self.askConfirmation(device: device, address: address, passkey: passkey, answer: answer)
            }
        }
        window.onChange = { [unowned self] open, secondsLeft in
            self.onEvent?(.window(open: open, secondsLeft: secondsLeft))
        }
        window.start()
    }

    /// Follows the session: the window goes on the adapter chosen, then the agent registers
    /// with its bluetoothd; both forget it when it goes.
    public func handle(_ event: BlueZSession.Event) {
        switch event {
        case .adapterAvailable(let adapter):
            // The adapter's settings as found first: registering the agent changes them.
            window?.adapterAvailable(path: adapter.path) { [weak agent] in agent?.bluezAvailable(owner: adapter.owner) }
        case .adapterGone, .vanished:
            agent?.bluezGone()
            window?.adapterGone()
            confirmations?.cancelAll(because: "bluetoothd or its adapter went away")
        case .absent, .appeared, .noAdapter, .adapterProperties, .powered, .interfacesAdded, .interfacesRemoved,
            .deviceChanged:
            break
        }
    }

    /// `bondedOnly`: a central that connects without a bond while pairing is closed is
    /// disconnected at once.
    public func centralConnected(device: String, address: String, centrals: CentralWatch) {
        switch policy.admission(bonded: { centrals.isBonded(device) }, pairingOpen: { window?.isOpen == true }) {
        case .admit:
            return
        case .admitToPair:
            logger.info("a central without a bond connected while pairing is open", metadata: ["device": "\(address)"])
            return
        case .disconnect:
            break
        }
        logger.notice("disconnecting a central that is not bonded (bondedOnly)", metadata: ["device": "\(address)"])
        centrals.disconnect(device: device) { [logger] error in
            guard let error else { return }
            logger.warning(
                "could not disconnect a central that is not bonded",
                metadata: ["device": "\(address)", "error": "\(error.name): \(error.message)"])
        }
    }

    /// The passkey reaches a person: the `onPasskey` program with `GATTD_PASSKEY` in its
    /// environment, the journal (`PASSKEY`, `DEVICE`) and `Event.passkey` (the control API's
    /// `PasskeyDisplayed`).
    /// Fail closed: when the program cannot start, the passkey is shown nowhere and the
    /// central is disconnected, which ends the pairing (bluetoothd sends `DisplayPasskey`
    /// without waiting for an answer, so an error reply would not).
    private func showPasskey(device: String, address: String, passkey: UInt32, centrals: CentralWatch) {
        let digits = PairingAgent.format(passkey: passkey)
        if let launch = policy.passkeyLaunch(passkey: digits, address: address, devicePath: device) {
            stopPasskeyProgram()
            do {
                passkeyProgram = try ChildProcess.start(
                    argv: launch.argv, environment: launch.environment, timeout: launch.timeout, loop: loop
                ) { [weak self, logger] finished in
                    self?.passkeyProgram = nil
                    guard finished.outcome != .exited(0) else { return }
                    logger.warning(
                        "passkey program failed",
                        metadata: ["outcome": "\(finished.outcome)", "program": "\(launch.argv[0])"])
                }
            } catch {
                logger.error(
                    "pairing refused: the passkey program cannot start; disconnecting the central",
                    metadata: ["program": "\(launch.argv[0])", "error": "\(error)", "device": "\(address)"])
                centrals.disconnect(device: device) { [logger] error in
                    guard let error else { return }
                    logger.warning(
                        "could not disconnect the central whose pairing was refused",
                        metadata: ["device": "\(address)", "error": "\(error.name): \(error.message)"])
                }
                return
            }
        }
        logger.notice(
            "passkey for pairing: \(digits)",
            metadata: ["passkey": "\(digits)", "device": "\(address)", "device.path": "\(device)"])
        onEvent?(.passkey(device: device, address: address, passkey: digits))
    }

    /// Numeric comparison: the six digits reach a person (journal `PASSKEY`, `DEVICE`; the
    /// control API's `PairingConfirmation`, through `Event.confirmation`) and the `onConfirm`
    /// program, and the pairing waits for `gattctl pairing confirm|reject`, the program's
    /// exit status, or the timeout. Fail closed: a second request for the same central, or a program that
    /// cannot start, rejects at once.
    private func askConfirmation(
        device: String, address: String, passkey: UInt32,
        answer: @escaping (Result<Void, PairingAgent.Rejection>) -> Void
    ) {
        guard let confirmations else { return answer(.failure(.init("numeric comparison is not offered"))) }
        let digits = PairingAgent.format(passkey: passkey)
        let pending = PendingConfirmations.Pending(device: device, address: address, passkey: digits)
        let started = confirmations.begin(pending) { [weak self] decision in
            if let program = self?.confirmPrograms.removeValue(forKey: address) { program.terminate() }
            answer(decision.accepted ? .success(()) : .failure(.init(decision.reason)))
        }
        guard started else {
            return answer(.failure(.init("a confirmation for this central is already pending")))
        }
        if let launch = policy.confirmLaunch(passkey: digits, address: address, devicePath: device) {
            do {
                confirmPrograms[address] = try ChildProcess.start(
                    argv: launch.argv, environment: launch.environment, timeout: launch.timeout, loop: loop
                ) { [weak self] finished in
                    guard let self, self.confirmPrograms[address] != nil else { return }
                    self.confirmPrograms[address] = nil
                    _ = self.confirmations?.decide(address: address, PairingPolicy.confirmation(by: finished.outcome))
                }
            } catch {
                logger.error(
                    "the onConfirm program cannot start",
                    metadata: ["program": "\(launch.argv[0])", "error": "\(error)", "device": "\(address)"])
                _ = confirmations.decide(
                    address: address, .reject(because: "the onConfirm program cannot start (\(error))"))
                return
            }
        }
        logger.notice(
            "confirm pairing: \(digits)",
            metadata: [
                "passkey": "\(digits)", "device": "\(address)", "device.path": "\(device)",
                "timeout": "\(definition.confirmSeconds) s",
            ])
        onEvent?(.confirmation(device: device, address: address, passkey: digits))
    }

    private func stopPasskeyProgram() {
        passkeyProgram?.terminate()
        passkeyProgram = nil
    }

    /// Stops the passkey program, puts the adapter's pairing settings back and unregisters
    /// the agent; `completion` once both answered (each bounded by a 1 s call timeout).
    public func stop(completion: @escaping () -> Void) {
        stopPasskeyProgram()
        confirmations?.cancelAll(because: "gattd is stopping")
        guard let agent, let window else { return completion() }
        var pending = 2
        let finished = {
            pending -= 1
            if pending == 0 { completion() }
        }
        window.stop(completion: finished)
        agent.stop(completion: finished)
    }
}
