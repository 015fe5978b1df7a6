// SPDX-License-Identifier: MIT

public import BLEModel

/// The decisions of the `security` object (docs/security.md), apart from the agent and
/// the pairing window that carry them out: whether a central that connects may stay
/// (`bondedOnly`), and how a passkey reaches the `onPasskey` program. Pure; `Pairing`
/// (BlueZ) asks it and acts.
public struct PairingPolicy: Sendable, Equatable {
    public let definition: SecurityDefinition

    public init(_ definition: SecurityDefinition) {
        self.definition = definition
    }

    /// What happens to a central that has just connected.
    public enum Admission: Equatable, Sendable {
        /// It stays: bonded, or `bondedOnly` is off.
        case admit
        /// Not bonded, but pairing is open: it stays so that it can bond (logged).
        case admitToPair
        /// `bondedOnly`, not bonded and pairing closed: disconnect it at once.
        case disconnect
    }

    /// Whether a central that connected may stay. `bonded` and `pairingOpen` are asked
    /// only when `bondedOnly` is on.
    public func admission(bonded: () -> Bool, pairingOpen: () -> Bool) -> Admission {
        guard definition.bondedOnly, !bonded() else { return .admit }
        return pairingOpen() ? .admitToPair : .disconnect
    }

    /// How the `onPasskey` program runs for one displayed passkey.
    public struct PasskeyLaunch: Equatable, Sendable {
        /// Program and arguments, not through a shell.
        public var argv: [String]
        /// `GATTD_PASSKEY` (six digits), `GATTD_DEVICE` (address), `GATTD_DEVICE_PATH`.
        public var environment: [String: String]
        /// Killed after this long.
        public var timeout: Duration

        public init(argv: [String], environment: [String: String], timeout: Duration) {
            self.argv = argv
            self.environment = environment
            self.timeout = timeout
        }
    }

    /// The `onPasskey` program for `passkey` (six digits) shown for the central at
    /// `address` (bluetoothd's object `devicePath`); nil when none is configured.
    public func passkeyLaunch(passkey: String, address: String, devicePath: String) -> PasskeyLaunch? {
        guard let program = definition.onPasskey else { return nil }
        return PasskeyLaunch(
            argv: program.argv,
            environment: ["GATTD_PASSKEY": passkey, "GATTD_DEVICE": address, "GATTD_DEVICE_PATH": devicePath],
            timeout: .milliseconds(program.timeoutMs))
    }
}

extension PairingPolicy {
    /// The `onConfirm` program for a numeric comparison showing `passkey` (six digits) for
    /// the central at `address`; nil when none is configured. It is killed when the
    /// confirmation times out (`confirmSeconds`), which rejects the pairing.
    public func confirmLaunch(passkey: String, address: String, devicePath: String) -> PasskeyLaunch? {
        guard let program = definition.onConfirm else { return nil }
        return PasskeyLaunch(
            argv: program.argv,
            environment: ["GATTD_PASSKEY": passkey, "GATTD_DEVICE": address, "GATTD_DEVICE_PATH": devicePath],
            timeout: .seconds(definition.confirmSeconds))
    }

    /// The decision an `onConfirm` program's end makes: exit status 0 accepts; anything
    /// else (another status, a signal, the timeout) rejects, with the reason.
    public static func confirmation(by outcome: ChildProcess.Outcome) -> PendingConfirmations.Decision {
        outcome == .exited(0)
            ? .accept(by: "the onConfirm program")
            : .reject(because: "the onConfirm program did not accept (\(outcome))")
    }
}
