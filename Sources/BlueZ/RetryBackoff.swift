// SPDX-License-Identifier: MIT

internal import DaemonCore

/// The BlueZ side's one retry back-off (the session's listing of bluetoothd's objects, the
/// registrar's `RegisterApplication` after no reply): the first retry after 1 s, each next
/// one twice as late, at most 30 s apart, back to 1 s once a call succeeds (`succeeded`).
/// One retry is pending at a time; its timers run on a `LoopClock` (the loop's in the daemon,
/// a manual clock in tests).
final class RetryBackoff {
    static let first: Duration = .seconds(1)
    static let longest: Duration = .seconds(30)

    private let clock: LoopClock
    private var delay = RetryBackoff.first
    private var cancelPending: (() -> Void)?

    init(clock: LoopClock) {
        self.clock = clock
    }

    /// Runs `action` after the current delay, replacing the retry pending, and doubles the
    /// delay. `action` checks for itself that what it retries still matters.
    func retry(_ action: @escaping () -> Void) {
        cancelPending?()
        cancelPending = clock.at(clock.now() + delay, action)
        delay = min(delay * 2, Self.longest)
    }

    /// The call succeeded: the next failure waits the first delay again.
    func succeeded() {
        delay = Self.first
    }

    /// Drops the retry pending, if any; the delay stays.
    func cancel() {
        cancelPending?()
        cancelPending = nil
    }
}
