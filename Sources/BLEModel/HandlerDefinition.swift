// SPDX-License-Identifier: MIT

/// How a characteristic served by a program's handler (`handler`) behaves when no
/// handler answers: none registered, the deadline passed, or the handler left the bus.
public struct HandlerDefinition: Sendable, Equatable {
    /// What a read or write gets when no handler answers.
    public enum Fallback: Sendable, Equatable {
        /// Reads get the stored value; writes are validated and stored as without a handler.
        case storedValue
        /// Reads and writes are refused with this ATT error (default `unlikely`, 0x0E).
        case error(GATTError)
    }

    /// Milliseconds a handler has to answer (default 2000, at most 10000: bluetoothd
    /// gives up on an application after 25 s, a central's ATT transaction after 30 s).
    public var timeoutMs: Int
    public var fallback: Fallback

    public static let defaultTimeoutMs = 2000
    public static let timeoutRange: ClosedRange<Int64> = 1...10_000

    public init(timeoutMs: Int = Self.defaultTimeoutMs, fallback: Fallback = .storedValue) {
        self.timeoutMs = timeoutMs
        self.fallback = fallback
    }
}
