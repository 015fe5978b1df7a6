// SPDX-License-Identifier: MIT

/// Readiness conditions of a file descriptor watched by an `EventLoop`.
///
/// `hangup` and `error` are always reported to a watch that has any interest at all (the
/// kernel reports them unconditionally); a watch whose `events` is empty receives nothing.
public struct IOEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Data can be read without blocking (or the peer closed its side).
    public static let readable = IOEvents(rawValue: 1 << 0)
    /// Data can be written without blocking.
    public static let writable = IOEvents(rawValue: 1 << 1)
    /// The peer hung up.
    public static let hangup = IOEvents(rawValue: 1 << 2)
    /// An error is pending on the descriptor.
    public static let error = IOEvents(rawValue: 1 << 3)
}
