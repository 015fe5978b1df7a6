// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging
public import Mainloop

/// Runs the `onWrite` programs of characteristics (no shell, on the loop, never blocking it).
///
/// The program gets the written bytes on stdin and, in its environment, `GATT_VALUE_HEX`
/// (lowercase hex of the bytes), `GATT_OFFSET`, `GATT_ID`, `GATT_UUID`, `GATT_DEVICE` (the
/// central's address as bluetoothd gives it: its identity once bonded) and
/// `GATT_DEVICE_PATH` (its object path, an opaque handle), each empty if unknown. The central's bytes never appear in argv.
///
/// - `decide` (hooks with `decides`): exit status 0 accepts; 128...159 rejects with the
///   ATT application error of that value; anything else, a signal or the timeout is
///   `unlikely` (0x0E).
/// - `written` (other hooks): runs after the write was accepted and stored; the outcome
///   is only logged.
/// - At most `maximumRunning` programs run per characteristic; past that `decide`
///   answers `unlikely` at once and `written` skips the program (logged).
/// - `stop()` (the daemon is stopping) sends SIGTERM to the process group of every
///   program still running, including those a runner replaced by a reload started: none
///   outlives the daemon.
public final class WriteHookRunner {
    public static let maximumRunning = 4
    /// Hook programs still running, shared by a runner and the one a reload replaces it with.
    public final class Programs {
        fileprivate var children: [Int: ChildProcess] = [:]
        fileprivate var started = 0
        public init() {}
    }

    private let hooks: [String: WriteHook]
    private let loop: EventLoop
    private let logger: Logger
    private var running: [String: Int] = [:]
    /// Programs still running, by start number (this runner's and its predecessors').
    public let programs: Programs

    /// `programs`: the previous runner's, when a reload replaces it.
    public init(configuration: Configuration, loop: EventLoop, logger: Logger, programs: Programs = Programs()) {
        var hooks: [String: WriteHook] = [:]
        for characteristic in configuration.services.flatMap(\.characteristics) {
            if let hook = characteristic.onWrite { hooks[characteristic.id] = hook }
        }
        self.hooks = hooks
        self.loop = loop
        self.logger = logger
        self.programs = programs
    }

    /// The hook of `attribute`, nil when it has none.
    public func hook(for attribute: Attribute) -> WriteHook? { hooks[attribute.id] }

    /// Programs of `id` still running.
    public func runningCount(_ id: String) -> Int { running[id] ?? 0 }

    /// The verdict of a deciding hook's outcome: nil accepts.
    public static func verdict(_ outcome: ChildProcess.Outcome) -> GATTError? {
        switch outcome {
        case .exited(0): nil
        case .exited(let status) where (128...159).contains(status): .application(UInt8(status))
        default: .unlikely
        }
    }

    /// Runs the deciding hook of `attribute` for a write not yet stored; `verdict` gets
    /// nil to accept or the error to answer.
    public func decide(
        _ attribute: Attribute, bytes: [UInt8], offset: Int, device: String?, address: String? = nil,
        verdict: @escaping (GATTError?) -> Void
    ) {
        guard let hook = hooks[attribute.id] else {
            verdict(nil)
            return
        }
        let started = run(hook, attribute, bytes, offset, (device, address)) { [logger] outcome in
            let error = Self.verdict(outcome)
            let metadata: Logger.Metadata = [
                "gatt.id": "\(attribute.id)", "outcome": "\(outcome)",
                "att.error": "\(error.map { "0x" + String($0.attCode, radix: 16) } ?? "none")",
            ]
            if Self.isVerdict(outcome) {
                logger.info(error == nil ? "write hook accepted the write" : "write hook refused the write", metadata: metadata)
            } else {
                // Timed out, killed, or an exit status that is no verdict: nobody decided.
                logger.warning("write refused: the deciding hook gave no verdict (\(outcome))", metadata: metadata)
            }
            verdict(error)
        }
        if !started {
            logger.warning(
                "write refused: the deciding hook could not run", metadata: ["gatt.id": "\(attribute.id)", "att.error": "0xe"])
            verdict(.unlikely)
        }
    }

    /// Whether `outcome` is one of the verdicts a deciding hook can give (0, 128...159).
    private static func isVerdict(_ outcome: ChildProcess.Outcome) -> Bool {
        if case .exited(let status) = outcome { return status == 0 || (128...159).contains(status) }
        return false
    }

    /// Runs the (non-deciding) hook of `attribute` after an accepted write.
    public func written(_ attribute: Attribute, bytes: [UInt8], offset: Int, device: String?, address: String? = nil) {
        guard let hook = hooks[attribute.id] else { return }
        _ = run(hook, attribute, bytes, offset, (device, address)) { [logger] outcome in
            guard outcome != .exited(0) else { return }
            logger.warning("write hook failed", metadata: ["gatt.id": "\(attribute.id)", "outcome": "\(outcome)"])
        }
    }

    /// False when the program could not start (logged).
    private func run(
        _ hook: WriteHook, _ attribute: Attribute, _ bytes: [UInt8], _ offset: Int,
        _ central: (path: String?, address: String?), _ done: @escaping (ChildProcess.Outcome) -> Void
    ) -> Bool {
        let id = attribute.id
        guard runningCount(id) < Self.maximumRunning else {
            logger.warning(
                "write hook not run: too many still running",
                metadata: ["gatt.id": "\(id)", "running": "\(runningCount(id))"])
            return false
        }
        let environment = [
            "GATT_VALUE_HEX": lowercaseHex(bytes), "GATT_OFFSET": "\(offset)", "GATT_ID": id,
            "GATT_UUID": "\(attribute.uuid)", "GATT_DEVICE": central.address ?? "",
            "GATT_DEVICE_PATH": central.path ?? "",
        ]
        programs.started += 1
        let number = programs.started
        do {
            programs.children[number] = try ChildProcess.start(
                argv: hook.argv, environment: environment, stdin: bytes, timeout: .milliseconds(hook.timeoutMs),
                loop: loop
            ) { [weak self, programs] finished in
                self?.running[id, default: 1] -= 1
                programs.children[number] = nil
                done(finished.outcome)
            }
        } catch {
            logger.error("write hook cannot start", metadata: ["gatt.id": "\(id)", "error": "\(error)"])
            return false
        }
        running[id, default: 0] += 1
        return true
    }

    /// SIGTERM to every program still running (each in its own process group); their
    /// outcomes are not waited for.
    public func stop() {
        for child in programs.children.values.sorted(by: { $0.pid < $1.pid }) {
            logger.info("stopping write hook", metadata: ["pid": "\(child.pid)"])
            child.terminate()
        }
    }
}
