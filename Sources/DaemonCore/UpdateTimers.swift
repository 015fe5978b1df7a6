// SPDX-License-Identifier: MIT

public import Mainloop

/// How `UpdateScheduler` starts its repeating timers.
///
/// The daemon uses the loop's monotonic repeating timer (no drift; a late loop runs one
/// tick and skips the missed ones, never a burst); tests pass
/// `ManualScheduler.updateTimers` (Tests/TestSupport).
public struct UpdateTimers {
    /// Starts a timer that first fires after `first`, then every `period`; returns the
    /// function that cancels it.
    public var repeating: (_ first: Duration, _ period: Duration, _ tick: @escaping () -> Void) -> () -> Void

    public init(repeating: @escaping (Duration, Duration, @escaping () -> Void) -> () -> Void) {
        self.repeating = repeating
    }

    /// `EventLoop.timer(after:repeating:)`.
    public static func loop(_ loop: EventLoop) -> UpdateTimers {
        UpdateTimers { first, period, tick in
            let timer = loop.timer(after: first, repeating: period, tick)
            return { timer.cancel() }
        }
    }
}
