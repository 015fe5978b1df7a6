// SPDX-License-Identifier: MIT

/// The two kinds of "later" `Persistence` needs from the event loop.
///
/// The daemon passes `EventLoop.afterIteration` and a one-shot `EventLoop.timer(after:)`
/// (`PersistenceScheduling.loop`); tests pass `ManualScheduler.persistenceScheduling`
/// (Tests/TestSupport) and run the callbacks themselves. Both run on the loop
/// thread, never concurrently with anything else on it.
public struct PersistenceScheduling {
    /// Runs the closure once, after the current loop iteration has handled its events.
    public var afterIteration: (@escaping () -> Void) -> Void
    /// Runs the closure once, after the delay. Persistence never has more than one pending.
    public var after: (Duration, @escaping () -> Void) -> Void

    public init(
        afterIteration: @escaping (@escaping () -> Void) -> Void,
        after: @escaping (Duration, @escaping () -> Void) -> Void
    ) {
        self.afterIteration = afterIteration
        self.after = after
    }
}
