// SPDX-License-Identifier: MIT

/// A program run when a characteristic is written (`onWrite`).
///
/// When `decides` is true the write waits for the program: exit status 0 accepts it,
/// 128...159 rejects it with the ATT application error of that value (0x80...0x9F), anything
/// else (or the timeout) is the daemon's to map. Otherwise the program runs after the
/// write was accepted and its status is only logged.
public struct WriteHook: Sendable, Equatable {
    /// Program and arguments, not run through a shell; never empty.
    public var argv: [String]
    /// Milliseconds before the program is killed (default 1000).
    public var timeoutMs: Int
    public var decides: Bool

    public init(argv: [String], timeoutMs: Int = 1000, decides: Bool = false) {
        self.argv = argv
        self.timeoutMs = timeoutMs
        self.decides = decides
    }
}
