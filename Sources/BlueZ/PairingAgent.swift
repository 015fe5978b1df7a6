// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
public import Logging

/// gattd's pairing agent: an `org.bluez.Agent1` object that bluetoothd asks when a central
/// pairs (docs/security.md).
///
/// - Registered with `AgentManager1.RegisterAgent` under the capability of the configured
///   mode (`NoInputNoOutput` for just-works, `DisplayOnly` for display-passkey,
///   `DisplayYesNo` for numeric-comparison) and made
///   the default agent, so bluetoothd asks it about pairings the central starts; registered
///   again whenever bluetoothd comes back (it keeps agents in memory only).
/// - Every method bluetoothd may call gets a deliberate answer: what the mode and the
///   pairing window allow is accepted, everything else is refused with
///   `org.bluez.Error.Rejected` (bluetoothd then fails the pairing).
/// - Only the current `org.bluez` owner may call it; anybody else is refused and logged.
/// - `DisplayPasskey` is handed to `onPasskey` (journal, control API, the `onPasskey`
///   program); the passkey itself is never answered to anyone.
/// - `RequestConfirmation` (numeric-comparison only) is handed to `onConfirmation`, and
///   answered when its decision comes (bluetoothd waits for the reply); without one, or
///   in another mode, it is refused.
public final class PairingAgent: DBusObject {
    /// What the agent did, for the daemon (logs, control API events, the passkey program).
    public enum Event: Equatable, Sendable {
        /// bluetoothd gave the passkey the person at `device` must type in.
        case passkey(device: String, address: String, passkey: UInt32)
        /// bluetoothd cancelled the request it was asking about.
        case cancelled
    }

    public let path: ObjectPath = BlueZNames.agentPath
    public let mode: SecurityDefinition.Pairing
    /// Whether pairing is allowed now (the pairing window); asked at every request.
    public var pairingAllowed: () -> Bool = { false }
    /// The address bluetoothd gives a device object (`CentralWatch.address(device:)`); nil
    /// when not known yet, and then bluetoothd is asked.
    public var centralAddress: (String) -> String? = { _ in nil }
    public var onEvent: ((Event) -> Void)?
    /// Numeric comparison: bluetoothd asks whether the six digits match. The receiver
    /// calls `answer` exactly once, later: accepted, or the reason for rejecting.
    public var onConfirmation:
        ((_ device: String, _ address: String, _ passkey: UInt32, _ answer: @escaping (Result<Void, Rejection>) -> Void) -> Void)?

    /// Why a confirmation was rejected, in words for the log and bluetoothd.
    public struct Rejection: Error, Sendable {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
    }
    /// The agent is registered (and asked to be the default) with a bluetoothd.
    public var onRegistered: (() -> Void)?
    /// The unique name of the `org.bluez` owner whose calls are answered.
    public private(set) var trustedSender: String?
    /// The `org.bluez` owner the agent is registered with, once it answered.
    public private(set) var registeredWith: String?

    private let connection: BusConnection
    /// Answers to registrations from before a change of bluetoothd or the adapter are
    /// ignored (`BlueZSession.generation`).
    private let session: BlueZSession
    private let logger: Logger
    /// Set by `stop`: answers still on their way are dropped.
    private var stopped = false
    private var exported = false
    /// The last passkey announced per device: `DisplayPasskey` is called again as the
    /// central reports keypresses, with the same passkey.
    private var announced: [String: UInt32] = [:]

    public let interfaces: [DBusInterface] = [
        DBusInterface(
            name: BlueZNames.agent,
            methods: [
                row("Release") { agent, request in
                    agent.registeredWith = nil
                    agent.logger.info("bluetoothd released the pairing agent")
                    request.call.reply()
                },
                row("RequestPinCode", in: "o", out: "s") { agent, request in
                    agent.reject(request, "gattd pairs over LE only; PIN codes are not used")
                },
                row("DisplayPinCode", in: "os") { agent, request in
                    agent.reject(request, "gattd pairs over LE only; PIN codes are not used")
                },
                row("RequestPasskey", in: "o", out: "u") { agent, request in
                    agent.reject(request, "gattd has no keyboard; it displays passkeys, it does not enter them")
                },
                row("DisplayPasskey", in: "ouq") { agent, request in agent.displayPasskey(request) },
                row("RequestConfirmation", in: "ou") { agent, request in agent.requestConfirmation(request) },
                row("RequestAuthorization", in: "o") { agent, request in agent.requestAuthorization(request) },
                row("AuthorizeService", in: "os") { agent, request in
                    let uuid = request.arguments.count > 1 ? request.arguments[1].asString ?? "" : ""
                    agent.reject(request, "gattd authorizes no profile connections (service \(uuid))")
                },
                row("Cancel") { agent, request in
                    agent.logger.info("bluetoothd cancelled the pairing request")
                    agent.onEvent?(.cancelled)
                    request.call.reply()
                },
            ])
    ]

    /// `mode` must pair (`.justWorks`, `.displayPasskey` or `.numericComparison`).
    public init(mode: SecurityDefinition.Pairing, connection: BusConnection, session: BlueZSession, logger: Logger) {
        precondition(mode.capability != nil, "a pairing agent needs a pairing mode")
        self.mode = mode
        self.connection = connection
        self.session = session
        self.logger = logger
    }

    /// Exports the agent object (once); registration waits for bluetoothd.
    public func start() throws(DBusError) {
        guard !exported else { return }
        try connection.export(self, at: path)
        exported = true
    }

    /// bluetoothd (`owner`) is on the bus with the adapter: register with it, unless already
    /// registered.
    public func bluezAvailable(owner: String) {
        guard owner != trustedSender, !stopped else { return }
        trustedSender = owner
        registeredWith = nil
        announced.removeAll()
        register(attempt: Attempt(generation: session.generation, owner: owner))
    }

    /// bluetoothd or the adapter went away: the registration went with it.
    public func bluezGone() {
        guard trustedSender != nil else { return }
        trustedSender = nil
        registeredWith = nil
        announced.removeAll()
    }

    /// The session's generation and the owner a registration went to.
    private struct Attempt {
        let generation: Int
        let owner: String
    }

    /// Whether an answer to `attempt` still matters: same bluetoothd, same adapter, not stopped.
    private func isCurrent(_ attempt: Attempt) -> Bool {
        !stopped && session.isCurrent(attempt.generation) && trustedSender == attempt.owner
    }

    private func register(attempt: Attempt) {
        guard let capability = mode.capability else { return }
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.bluezRoot, interface: BlueZNames.agentManager,
            member: "RegisterAgent", arguments: [.objectPath(path), .string(capability)]
        ) { [weak self] result in
            guard let self, self.isCurrent(attempt) else { return }
            switch result.registered {
            case .success:
                self.makeDefault(attempt: attempt)
            case .failure(let error):
                self.logger.error(
                    "bluetoothd refused the pairing agent; centrals cannot pair",
                    metadata: ["error": "\(error.name): \(error.message)", "capability": "\(capability)"])
            }
        }
    }

    private func makeDefault(attempt: Attempt) {
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.bluezRoot, interface: BlueZNames.agentManager,
            member: "RequestDefaultAgent", arguments: [.objectPath(path)]
        ) { [weak self] result in
            guard let self, self.isCurrent(attempt) else { return }
            if case .failure(let error) = result {
                self.logger.error(
                    "bluetoothd did not make gattd's agent the default; pairings a central starts may find no agent",
                    metadata: ["error": "\(error.name): \(error.message)"])
            }
            self.registeredWith = attempt.owner
            self.logger.info(
                "pairing agent registered",
                metadata: ["pairing": "\(self.mode.rawValue)", "capability": "\(self.mode.capability ?? "")"])
            self.onRegistered?()
        }
    }

    /// Unregisters (best effort, bounded) and removes the object; then `completion`.
    public func stop(completion: @escaping () -> Void) {
        stopped = true
        let wasRegistered = registeredWith != nil
        registeredWith = nil
        let unexport = { [weak self] in
            guard let self else { return completion() }
            if self.exported { self.connection.unexport(self.path) }
            self.exported = false
            completion()
        }
        guard wasRegistered else { return unexport() }
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.bluezRoot, interface: BlueZNames.agentManager,
            member: "UnregisterAgent", arguments: [.objectPath(path)], timeout: .seconds(1)
        ) { [weak self] result in
            if case .failure(let error) = result {
                self?.logger.warning(
                    "could not unregister the pairing agent", metadata: ["error": "\(error.name): \(error.message)"])
            }
            unexport()
        }
    }

    // MARK: - Agent1

    /// A call bluetoothd made, with the device it names (the first argument, when it is one).
    struct Request {
        let call: MethodCall
        let method: String
        let arguments: [DBusValue]
        let device: String
        let address: String
    }

    /// One `Agent1` method: its name and signatures, and its answer to bluetoothd.
    private static func row(
        _ name: String, in inSignature: String = "", out outSignature: String = "",
        _ answer: @escaping @Sendable (PairingAgent, Request) -> Void
    ) -> DBusMethod {
        DBusMethod(name, inSignature: inSignature, outSignature: outSignature) { (agent: PairingAgent, call) in
            agent.admit(call, name) { request in answer(agent, request) }
        }
    }

    /// The call as a request when the current `org.bluez` owner made it; anyone else is
    /// refused and logged. The central it names is named by its `Address` (`centralAddress`,
    /// else asked of bluetoothd), never by its object path; a central whose address cannot
    /// be learned is refused (fail closed: nobody could be told who pairs).
    private func admit(_ call: MethodCall, _ method: String, then answer: @escaping (Request) -> Void) {
        guard let trustedSender, call.isSent(by: trustedSender) else {
            logger.warning(
                "pairing agent call refused: not from bluetoothd",
                metadata: ["method": "\(method)", "sender": "\(call.sender ?? "?")"])
            call.fail(DBusError(name: BlueZError.rejected, message: "only bluetoothd may call gattd's agent"))
            return
        }
        let arguments = (try? call.arguments()) ?? []
        guard let path = arguments.first?.asObjectPath else {
            // Release, Cancel: no central.
            return answer(Request(call: call, method: method, arguments: arguments, device: "", address: ""))
        }
        let device = path.rawValue
        if let address = centralAddress(device) {
            return answer(Request(call: call, method: method, arguments: arguments, device: device, address: address))
        }
        connection.call(
            destination: trustedSender, path: path, interface: Freedesktop.properties, member: "Get",
            arguments: [.string(BlueZNames.device), .string("Address")]
        ) { [weak self] result in
            guard let self else { return }
            let address = (try? result.get().arguments())?.first?.asString
            let request = Request(
                call: call, method: method, arguments: arguments, device: device, address: address ?? "")
            guard address != nil else {
                return self.reject(request, "bluetoothd did not say the address of \(device)")
            }
            answer(request)
        }
    }

    /// Just Works: bluetoothd asks whether an unauthenticated pairing may go ahead.
    private func requestAuthorization(_ request: Request) {
        guard mode == .justWorks else {
            return reject(
                request,
                mode == .displayPasskey
                    ? "display-passkey pairs only with a passkey"
                    : "numeric-comparison pairs only when the six digits are confirmed")
        }
        guard pairingAllowed() else { return reject(request, "pairing is closed") }
        logger.notice("pairing accepted (just works)", metadata: ["device": "\(request.address)"])
        request.call.reply()
    }

    private func displayPasskey(_ request: Request) {
        guard mode == .displayPasskey else {
            return reject(
                request,
                mode == .justWorks ? "just-works shows no passkey" : "numeric-comparison pairs by comparing digits only")
        }
        guard pairingAllowed() else { return reject(request, "pairing is closed") }
        let passkey = request.arguments.count > 1 ? request.arguments[1].asUInt32 ?? 0 : 0
        request.call.reply()
        guard announced[request.device] != passkey else { return }
        announced[request.device] = passkey
        onEvent?(.passkey(device: request.device, address: request.address, passkey: passkey))
    }

    /// Numeric comparison: the decision is asked for, and bluetoothd's call answered when
    /// it comes (fail closed: no receiver, no decision).
    private func requestConfirmation(_ request: Request) {
        guard mode == .numericComparison else {
            return reject(request, "numeric comparison is not offered (\(mode.rawValue))")
        }
        guard pairingAllowed() else { return reject(request, "pairing is closed") }
        guard let onConfirmation else { return reject(request, "nobody can confirm the digits") }
        let passkey = request.arguments.count > 1 ? request.arguments[1].asUInt32 ?? 0 : 0
        onConfirmation(request.device, request.address, passkey) { [weak self] result in
            switch result {
            case .success:
                self?.logger.notice(
                    "pairing accepted (numeric comparison)", metadata: ["device": "\(request.address)"])
                request.call.reply()
            case .failure(let rejection):
                guard let self else {
                    return request.call.fail(DBusError(name: BlueZError.rejected, message: rejection.reason))
                }
                self.reject(request, rejection.reason)
            }
        }
    }

    private func reject(_ request: Request, _ reason: String) {
        logger.notice(
            "pairing request refused",
            metadata: ["method": "\(request.method)", "device": "\(request.address)", "reason": "\(reason)"])
        request.call.fail(DBusError(name: BlueZError.rejected, message: reason))
    }

    /// Six digits, zero-padded, as a person reads a passkey.
    public static func format(passkey: UInt32) -> String {
        let digits = String(passkey % 1_000_000)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
