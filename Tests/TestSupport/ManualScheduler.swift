// SPDX-License-Identifier: MIT

public import DaemonCore

/// The event loop's scheduling, played by hand: one fake for the three seams through which
/// DaemonCore and BlueZ get time from the loop (`LoopClock`, `UpdateTimers`,
/// `PersistenceScheduling`).
///
/// Time stands still until the test moves it with `advance(by:)`, which runs every timer
/// that falls due on the way, one-shot or repeating, in the order of their deadlines (equal
/// deadlines in the order they were started), with `now` at each one's deadline, as a loop
/// that is never late would. "After this iteration" work waits for `endIteration()`.
/// A new test fake of the loop's timing belongs here, not in a suite.
///
/// The views (`clock`, `updateTimers`, `persistenceScheduling`) do not keep the scheduler
/// alive: the test holds it for as long as anything built on them may ask the time.
public final class ManualScheduler {
    private struct Timer {
        var at: ContinuousClock.Instant
        let order: Int
        let period: Duration?
        let job: () -> Void
    }

    /// The current time; moves only in `advance(by:)`.
    public private(set) var now: ContinuousClock.Instant
    private var timers: [Timer] = []
    private var iterationEnd: [() -> Void] = []
    private var started = 0
    /// The deadline of the timer whose job is running, if any.
    private var running: ContinuousClock.Instant?

    public init(now: ContinuousClock.Instant = .now) {
        self.now = now
    }

    /// The loop's clock and one-shot timers, as `LoopClock.loop` gives them; inside a
    /// timer's job `due` is that timer's deadline, as the loop reports it.
    public var clock: LoopClock {
        LoopClock(
            now: { [unowned self] in now },
            at: { [unowned self] instant, job in start(at: instant, period: nil, job) },
            due: { [unowned self] in running ?? now })
    }

    /// Repeating timers, as `UpdateTimers.loop` gives them: the first tick after `first`,
    /// then every `period`.
    public var updateTimers: UpdateTimers {
        UpdateTimers { [unowned self] first, period, tick in
            precondition(period > .zero, "a repeating timer needs a period above zero")
            return start(at: now + first, period: period, tick)
        }
    }

    /// All three, as the runtime factory takes them (`RuntimeFactory(scheduling:)`).
    public var scheduling: RuntimeScheduling {
        RuntimeScheduling(clock: clock, timers: updateTimers, persistence: persistenceScheduling)
    }

    /// `Persistence`'s two kinds of later: after the iteration (`endIteration()`) and after
    /// a delay (a one-shot timer).
    public var persistenceScheduling: PersistenceScheduling {
        PersistenceScheduling(
            afterIteration: { [unowned self] job in iterationEnd.append(job) },
            after: { [unowned self] delay, job in _ = start(at: now + delay, period: nil, job) })
    }

    /// Timers started and neither cancelled nor, for one-shots, run.
    public var pendingCount: Int { timers.count }

    /// How long until the earliest pending timer is due, if any.
    public var nextDelay: Duration? { timers.map(\.at).min().map { $0 - now } }

    /// The periods of the running repeating timers.
    public var repeatingPeriods: [Duration] { timers.compactMap(\.period) }

    /// "After this iteration" jobs waiting for `endIteration()`.
    public var pendingAfterIteration: Int { iterationEnd.count }

    /// Moves time forward, running each timer due by the new time in deadline order (a
    /// repeating one once per period passed). `.zero` runs what is due now.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "time does not go back")
        let target = now + duration
        while let index = nextDue(by: target) {
            let timer = timers[index]
            if let period = timer.period {
                timers[index].at = timer.at + period
            } else {
                timers.remove(at: index)
            }
            now = max(now, timer.at)
            running = timer.at
            timer.job()
            running = nil
        }
        now = target
    }

    /// Runs `work` as a timer's job that was due at `due` and runs at `now` (a late loop).
    public func tick(dueAt due: ContinuousClock.Instant, _ work: () -> Void) {
        running = due
        work()
        running = nil
    }

    /// Ends the loop iteration: runs the "after this iteration" jobs queued so far; jobs
    /// they queue wait for the next call.
    public func endIteration() {
        let jobs = iterationEnd
        iterationEnd = []
        for job in jobs { job() }
    }

    private func start(
        at instant: ContinuousClock.Instant, period: Duration?, _ job: @escaping () -> Void
    ) -> () -> Void {
        started += 1
        let order = started
        timers.append(Timer(at: instant, order: order, period: period, job: job))
        return { [weak self] in self?.timers.removeAll { $0.order == order } }
    }

    private func nextDue(by target: ContinuousClock.Instant) -> Int? {
        var best: Int?
        for (index, timer) in timers.enumerated() where timer.at <= target {
            if let current = best, (timers[current].at, timers[current].order) <= (timer.at, timer.order) { continue }
            best = index
        }
        return best
    }
}
