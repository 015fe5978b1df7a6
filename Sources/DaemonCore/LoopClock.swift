// SPDX-License-Identifier: MIT

public import Mainloop

/// The time source and one-shot timers of `NotificationPacer` and of the BlueZ module's
/// back-offs and pairing window (registrar, advertiser, `PairingWindow`): the loop's
/// monotonic clock in the daemon, `ManualScheduler.clock` (Tests/TestSupport) in tests.
public struct LoopClock {
    public var now: () -> ContinuousClock.Instant
    /// Runs the closure once at the instant; returns the function that cancels it.
    public var at: (ContinuousClock.Instant, @escaping () -> Void) -> () -> Void
    /// When the work now being done was due: inside a timer's callback its deadline (a
    /// value source's tick is due on its grid, whenever the loop woke for it), else `now()`.
    public var due: () -> ContinuousClock.Instant

    /// `due` defaults to `now`: every event is taken as due when it is handled.
    public init(
        now: @escaping () -> ContinuousClock.Instant,
        at: @escaping (ContinuousClock.Instant, @escaping () -> Void) -> () -> Void,
        due: (() -> ContinuousClock.Instant)? = nil
    ) {
        self.now = now
        self.at = at
        self.due = due ?? now
    }

    public static func loop(_ loop: EventLoop) -> LoopClock {
        LoopClock(
            now: { ContinuousClock.now },
            at: { instant, job in
                let timer = loop.timer(at: instant, job)
                return { timer.cancel() }
            },
            due: { loop.runningTimerDue ?? ContinuousClock.now })
    }
}
