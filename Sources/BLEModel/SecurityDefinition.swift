// SPDX-License-Identifier: MIT

/// The top-level `security` object: how gattd pairs with centrals, when it lets them
/// pair, and whether strangers may stay connected (config/README.md, "Security").
public struct SecurityDefinition: Sendable, Equatable {
    /// What gattd's pairing agent can do, as the capability it registers with bluetoothd.
    public enum Pairing: String, CaseIterable, Sendable {
        /// No agent: gattd never answers a pairing. Flags that need encryption are refused.
        case none = "none"
        /// `NoInputNoOutput`: unauthenticated pairing (Just Works). `encrypt-*` flags work;
        /// flags that need authentication (`encrypt-authenticated-*`, `secure-*`) are refused.
        case justWorks = "just-works"
        /// `DisplayOnly`: bluetoothd hands gattd a 6-digit passkey that the person at the
        /// central types in (authenticated pairing, MITM protection).
        case displayPasskey = "display-passkey"
        /// `DisplayYesNo`: numeric comparison. bluetoothd hands gattd six digits that both
        /// sides show; a person (`gattctl pairing confirm`) or the `onConfirm` program
        /// decides (authenticated pairing, MITM protection; LE Secure Connections only).
        case numericComparison = "numeric-comparison"

        /// The `org.bluez.AgentManager1.RegisterAgent` capability.
        public var capability: String? {
            switch self {
            case .none: nil
            case .justWorks: "NoInputNoOutput"
            case .displayPasskey: "DisplayOnly"
            case .numericComparison: "DisplayYesNo"
            }
        }

        /// Whether a pairing in this mode can give an authenticated (MITM-protected) key.
        public var authenticates: Bool { self == .displayPasskey || self == .numericComparison }
    }

    /// When a central may pair (bond), mapped onto the adapter's `Pairable`.
    public enum Pairable: Sendable, Equatable {
        case always
        case never
        /// For `seconds` after gattd starts and after `gattctl pairing open`.
        case window(seconds: Int)

        public var word: String {
            switch self {
            case .always: "always"
            case .never: "never"
            case .window: "window"
            }
        }
    }

    /// A program run with the passkey while it is displayed (`onPasskey`).
    public struct PasskeyProgram: Sendable, Equatable {
        /// Program and arguments, not run through a shell; never empty.
        public var argv: [String]
        /// Milliseconds before the program is killed.
        public var timeoutMs: Int

        public init(argv: [String], timeoutMs: Int = Self.defaultTimeoutMs) {
            self.argv = argv
            self.timeoutMs = timeoutMs
        }

        public static let defaultTimeoutMs = 30_000
    }

    public var pairing: Pairing
    public var pairable: Pairable
    /// Disconnect a central that is not bonded as soon as it connects (unless pairing is
    /// open, so that a new central can bond).
    public var bondedOnly: Bool
    public var onPasskey: PasskeyProgram?
    /// Numeric comparison: the program that decides (exit status 0 accepts), if any.
    /// Its `timeoutMs` is unused: it is killed when the decision times out.
    public var onConfirm: PasskeyProgram?
    /// Numeric comparison: seconds a confirmation waits for its decision before it is
    /// rejected (`confirmSeconds`).
    public var confirmSeconds: Int

    /// How long a numeric comparison waits by default: below the kernel's 30 s SMP timer
    /// (the pairing fails there anyway) and bluetoothd's 60 s agent timeout.
    public static let defaultConfirmSeconds = 20
    /// The range `confirmSeconds` accepts.
    public static let confirmRange: ClosedRange<Int64> = 1...25
    /// The pairing window when `pairable` is absent.
    public static let defaultWindowSeconds = 120
    /// Longest pairing window (one day), and the range `gattctl pairing open` accepts.
    public static let windowRange: ClosedRange<Int64> = 1...86_400

    public init(
        pairing: Pairing = .none, pairable: Pairable = .window(seconds: Self.defaultWindowSeconds),
        bondedOnly: Bool = false, onPasskey: PasskeyProgram? = nil, onConfirm: PasskeyProgram? = nil,
        confirmSeconds: Int = Self.defaultConfirmSeconds
    ) {
        self.pairing = pairing
        self.pairable = pairable
        self.bondedOnly = bondedOnly
        self.onPasskey = onPasskey
        self.onConfirm = onConfirm
        self.confirmSeconds = confirmSeconds
    }

    /// Whether gattd runs a pairing agent and manages the adapter's `Pairable`.
    public var pairs: Bool { pairing != .none }

    /// `pairing just-works, pairable window 120 s, bondedOnly no` (the `--check` report).
    public var summary: String {
        var text = "pairing \(pairing.rawValue)"
        if pairs {
            switch pairable {
            case .window(let seconds): text += ", pairable for \(seconds) s after start and after `gattctl pairing open`"
            case .always: text += ", pairable always"
            case .never: text += ", pairable never (bonds made before still work)"
            }
        }
        text += ", bondedOnly \(bondedOnly ? "yes" : "no")"
        if let onPasskey { text += ", onPasskey runs \(onPasskey.argv[0])" }
        if pairing == .numericComparison {
            text += ", confirmations wait \(confirmSeconds) s"
            if let onConfirm { text += ", onConfirm runs \(onConfirm.argv[0])" }
        }
        return text
    }
}

/// What a characteristic or descriptor flag asks of the link before bluetoothd lets a
/// central use the attribute.
public enum LinkSecurity: Int, Sendable, Comparable {
    case open = 0
    /// An encrypted link: any pairing.
    case encrypted
    /// An encrypted link with an authenticated key (MITM protection).
    case authenticated
    /// Authenticated and LE Secure Connections.
    case secureConnections

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension CharacteristicFlag {
    public var linkSecurity: LinkSecurity {
        switch self {
        case .encryptRead, .encryptWrite, .encryptNotify, .encryptIndicate: .encrypted
        case .encryptAuthenticatedRead, .encryptAuthenticatedWrite, .encryptAuthenticatedNotify,
            .encryptAuthenticatedIndicate:
            .authenticated
        case .secureRead, .secureWrite, .secureNotify, .secureIndicate: .secureConnections
        default: .open
        }
    }
}

extension DescriptorFlag {
    public var linkSecurity: LinkSecurity {
        switch self {
        case .encryptRead, .encryptWrite: .encrypted
        case .encryptAuthenticatedRead, .encryptAuthenticatedWrite: .authenticated
        case .secureRead, .secureWrite: .secureConnections
        default: .open
        }
    }
}
