// SPDX-License-Identifier: MIT

/// A one-shot or repeating timer on an `EventLoop`'s monotonic clock.
///
/// A repeating timer keeps its phase: each deadline is the previous deadline plus the
/// period. When the loop is late by more than a period, the missed firings are skipped
/// (the handler runs once, and the next deadline is the first one still in the future).
public final class LoopTimer {
    /// Absolute deadline in CLOCK_MONOTONIC nanoseconds.
    var deadline: Int64
    let period: Int64?
    let handler: () -> Void
    let sequence: UInt64
    /// Position in the loop's heap, or -1 when not scheduled.
    var heapIndex = -1
    weak var loop: EventLoop?

    init(deadline: Int64, period: Int64?, sequence: UInt64, loop: EventLoop, handler: @escaping () -> Void) {
        self.deadline = deadline
        self.period = period
        self.sequence = sequence
        self.loop = loop
        self.handler = handler
    }

    /// True until a one-shot timer fires or the timer is cancelled.
    public var isActive: Bool { heapIndex >= 0 }

    /// Unschedules the timer; idempotent, and safe from inside its own handler.
    public func cancel() {
        guard heapIndex >= 0 else { return }
        loop?.timers.remove(self)
    }

    /// The deadline after `previous` for a timer repeating every `period` nanoseconds:
    /// `previous + period` (no drift), or when the loop is already past that, the first
    /// slot of the same phase still in the future (missed periods are skipped, not queued).
    static func nextDeadline(after previous: Int64, period: Int64, now: Int64) -> Int64 {
        var next = previous + period
        if next <= now { next += ((now - next) / period + 1) * period }
        return next
    }
}
