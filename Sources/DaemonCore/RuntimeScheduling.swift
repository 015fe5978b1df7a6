// SPDX-License-Identifier: MIT

public import Mainloop

/// The one seam through which a runtime gets time from the loop (`RuntimeFactory`): the
/// notifier's clock, the value sources' timers and persistence's later saves. The daemon
/// gives the loop's (`loop`); a test gives `ManualScheduler.scheduling` (Tests/TestSupport),
/// so every suite builds its runtime through the factory, with time moved by hand.
public struct RuntimeScheduling {
    /// Paces notifications.
    public var clock: LoopClock
    /// The value sources' repeating timers.
    public var timers: UpdateTimers
    /// Persistence's after-iteration flushes and delayed saves.
    public var persistence: PersistenceScheduling

    public init(clock: LoopClock, timers: UpdateTimers, persistence: PersistenceScheduling) {
        self.clock = clock
        self.timers = timers
        self.persistence = persistence
    }

    /// Everything on `loop`: its monotonic clock, its timers, its iterations.
    public static func loop(_ loop: EventLoop) -> RuntimeScheduling {
        RuntimeScheduling(clock: .loop(loop), timers: .loop(loop), persistence: .loop(loop))
    }
}
