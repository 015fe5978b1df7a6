// SPDX-License-Identifier: MIT

/// Numeric comparisons waiting for their decision (docs/security.md, "Numeric
/// comparison"): at most one per central, each answered exactly once — accepted by
/// `decide(… accept: true)` (`gattctl pairing confirm`, the `onConfirm` program), rejected
/// by `decide(… accept: false)`, by `cancelAll`, or by its timeout. Fail closed: a
/// confirmation nobody decides is rejected when its time is up.
public final class PendingConfirmations {
    /// How a confirmation ended.
    public enum Decision: Equatable, Sendable {
        case accept(by: String)
        case reject(because: String)

        public var accepted: Bool { if case .accept = self { true } else { false } }
        /// Who accepted, or why it was rejected, in words.
        public var reason: String {
            switch self {
            case .accept(let who): "accepted by \(who)"
            case .reject(let why): why
            }
        }
    }

    /// One confirmation waiting.
    public struct Pending: Equatable, Sendable {
        /// bluetoothd's object path of the central.
        public let device: String
        /// `AA:BB:CC:DD:EE:FF`.
        public let address: String
        /// Six digits.
        public let passkey: String

        public init(device: String, address: String, passkey: String) {
            self.device = device
            self.address = address
            self.passkey = passkey
        }
    }

    /// Why `decide` found nothing to decide.
    public enum Refusal: Error, Equatable, Sendable {
        /// Nothing waits for this address (or, with no address, at all).
        case nothingPending(address: String?)
        /// No address was named and several centrals wait: which one is meant is unclear.
        case ambiguous(addresses: [String])

        public var message: String {
            switch self {
            case .nothingPending(let address?): "no pairing confirmation is pending for \(address)"
            case .nothingPending(nil): "no pairing confirmation is pending"
            case .ambiguous(let addresses):
                "several pairing confirmations are pending (\(addresses.joined(separator: ", "))): name the address"
            }
        }
    }

    public let timeout: Duration
    private let clock: LoopClock
    private var entries: [String: (pending: Pending, answer: (Decision) -> Void, cancelTimer: () -> Void)] = [:]

    public init(timeout: Duration, clock: LoopClock) {
        self.timeout = timeout
        self.clock = clock
    }

    /// The confirmations waiting, by address.
    public var pending: [Pending] { entries.values.map(\.pending).sorted { $0.address < $1.address } }

    /// Starts waiting for the decision on `pending`; `answer` gets it exactly once (the
    /// timeout's rejection included). False, and `answer` is never called, when a
    /// confirmation for the same central already waits: only one at a time.
    public func begin(_ pending: Pending, answer: @escaping (Decision) -> Void) -> Bool {
        guard entries[pending.address] == nil else { return false }
        let seconds = timeout.components.seconds
        let cancelTimer = clock.at(clock.now() + timeout) { [weak self] in
            self?.finish(
                pending.address,
                .reject(because: "nobody confirmed within \(seconds) s (confirmSeconds)"), cancelTimer: false)
        }
        entries[pending.address] = (pending, answer, cancelTimer)
        return true
    }

    /// Decides the confirmation for `address` (nil: the only one waiting). Returns what was
    /// decided, or why nothing was.
    public func decide(address: String?, _ decision: Decision) -> Result<Pending, Refusal> {
        let key: String
        if let address {
            guard entries[address] != nil else { return .failure(.nothingPending(address: address)) }
            key = address
        } else {
            let waiting = entries.keys.sorted()
            guard let only = waiting.first else { return .failure(.nothingPending(address: nil)) }
            guard waiting.count == 1 else { return .failure(.ambiguous(addresses: waiting)) }
            key = only
        }
        guard let pending = finish(key, decision, cancelTimer: true) else {
            return .failure(.nothingPending(address: address))
        }
        return .success(pending)
    }

    /// Rejects every confirmation waiting (bluetoothd cancelled or left, gattd stops).
    public func cancelAll(because reason: String) {
        for address in entries.keys.sorted() { finish(address, .reject(because: reason), cancelTimer: true) }
    }

    @discardableResult
    private func finish(_ address: String, _ decision: Decision, cancelTimer: Bool) -> Pending? {
        guard let entry = entries.removeValue(forKey: address) else { return nil }
        if cancelTimer { entry.cancelTimer() }
        entry.answer(decision)
        return entry.pending
    }
}
