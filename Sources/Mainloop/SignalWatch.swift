// SPDX-License-Identifier: MIT

/// A handler for a Unix signal delivered through signalfd, returned by `EventLoop.onSignal`.
///
/// Cancelling the last watch for a signal closes its signalfd but leaves the signal blocked
/// in the thread that registered it, so a late signal stays pending instead of running the
/// default action.
public final class SignalWatch {
    /// The signal number.
    public let signal: Int32
    let handler: () -> Void
    weak var loop: EventLoop?

    /// Whether the watch still receives signals.
    public private(set) var isActive = true

    init(signal: Int32, loop: EventLoop, handler: @escaping () -> Void) {
        self.signal = signal
        self.loop = loop
        self.handler = handler
    }

    /// Stops delivery; idempotent.
    public func cancel() {
        guard isActive else { return }
        isActive = false
        loop?.removeSignalWatch(self)
    }
}
