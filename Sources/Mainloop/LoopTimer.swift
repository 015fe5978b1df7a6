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
}
