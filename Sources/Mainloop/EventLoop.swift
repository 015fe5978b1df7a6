// SPDX-License-Identifier: MIT
import CLinux
import Glibc

/// The daemon's single event loop: epoll over file descriptors, a heap of monotonic timers,
/// signalfd signals, an eventfd for cross-thread posts, and "after this batch" callbacks.
///
/// Not `Sendable`: the loop and every object registered on it belong to the thread that
/// calls `run()`. The only thread-safe entry is `poster` (and `post`, which forwards to it).
/// One turn is: wait in epoll (no timeout when idle with no timers, so an idle daemon never
/// wakes), run I/O handlers, run due timers, then run `afterIteration` callbacks.
public final class EventLoop {
    let epollFD: Int32
    var timers = TimerHeap()
    var signalSources: [Int32: SignalSource] = [:]
    private var registrations = FDTable()
    private var afterQueue: [AfterIterationJob] = []
    /// The buffer of the batch last run, emptied with its capacity kept, so queueing a
    /// callback each turn does not allocate a new array each turn.
    private var afterSpare: [AfterIterationJob] = []
    private var stopRequested = false
    private var timerSequence: UInt64 = 0
    /// False once the kernel answered ENOSYS to epoll_pwait2 (before Linux 5.11).
    private var usePwait2 = true
    private let eventBuffer: UnsafeMutablePointer<epoll_event>
    private let eventCapacity: Int32 = 64
    private var posterWatch: IOWatch?

    /// The thread-safe handle for posting jobs or stopping the loop from other threads.
    public let poster: LoopPoster

    /// Creates the epoll set and the post eventfd.
    public init() throws {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw LoopError(operation: "epoll_create1", code: errno) }
        epollFD = fd
        eventBuffer = .allocate(capacity: Int(eventCapacity))
        do {
            poster = try LoopPoster()
        } catch {
            close(fd)
            eventBuffer.deallocate()
            throw error
        }
        let poster = self.poster
        posterWatch = watch(fd: poster.eventFD, events: .readable) { [unowned self] _ in
            let (jobs, stop) = poster.drain()
            if stop { self.stopRequested = true }
            for job in jobs { job() }
        }
    }

    deinit {
        for source in signalSources.values { close(source.fd) }
        close(epollFD)
        eventBuffer.deallocate()
    }

    // MARK: Running

    /// Runs turns until `stop()` (or `poster.stop()`) is called.
    public func run() {
        stopRequested = false
        while !stopRequested {
            turn(maxWaitNanoseconds: nil)
        }
        stopRequested = false
    }

    /// Makes `run()` return at the end of the current turn.
    public func stop() { stopRequested = true }

    /// Runs turns until `done()` is true or `timeout` has elapsed; returns `done()`.
    /// `done` is checked before each turn. Meant for tests.
    @discardableResult
    public func run(until done: () -> Bool, timeout: Duration) -> Bool {
        let deadline = MonotonicTime.now() + MonotonicTime.nanoseconds(timeout)
        while !done() {
            let remaining = deadline - MonotonicTime.now()
            if remaining <= 0 { return done() }
            turn(maxWaitNanoseconds: remaining)
        }
        return true
    }

    /// Queues `job` from any thread; see `LoopPoster.post`.
    public func post(_ job: @escaping @Sendable () -> Void) { poster.post(job) }

    /// Runs `handler` once at the end of the current turn, before the loop sleeps again.
    /// Callbacks run in the order added; ones added by a running callback run in the same turn.
    public func afterIteration(_ handler: @escaping () -> Void) {
        afterQueue.append(AfterIterationJob(run: handler))
    }

    // MARK: File descriptors

    /// Calls `handler` with the ready conditions whenever `fd` is ready for `events`
    /// (level-triggered: it is called again next turn if the condition persists).
    public func watch(fd: Int32, events: IOEvents, _ handler: @escaping (IOEvents) -> Void) -> IOWatch {
        let watch = IOWatch(fd: fd, events: events, loop: self, handler: handler)
        let registration: FDRegistration
        if let existing = registrations[fd] {
            registration = existing
        } else {
            registration = FDRegistration()
            registrations[fd] = registration
        }
        registration.watches.append(watch)
        updateInterest(fd: fd)
        return watch
    }

    func remove(_ watch: IOWatch) {
        guard let registration = registrations[watch.fd] else { return }
        registration.watches.removeAll { $0 === watch }
        updateInterest(fd: watch.fd)
        if registration.watches.isEmpty { registrations[watch.fd] = nil }
    }

    func updateInterest(fd: Int32) {
        guard let registration = registrations[fd] else { return }
        var wanted: UInt32 = 0
        for watch in registration.watches {
            if watch.interest.contains(.readable) { wanted |= EPOLLIN.rawValue }
            if watch.interest.contains(.writable) { wanted |= EPOLLOUT.rawValue }
        }
        guard wanted != registration.registeredMask else { return }
        var event = epoll_event()
        event.events = wanted
        event.data.fd = fd
        let op: Int32
        if wanted == 0 {
            op = EPOLL_CTL_DEL
        } else if registration.registeredMask == 0 {
            op = EPOLL_CTL_ADD
        } else {
            op = EPOLL_CTL_MOD
        }
        let result = epoll_ctl(epollFD, op, fd, &event)
        precondition(result == 0 || op == EPOLL_CTL_DEL, "epoll_ctl(\(op), fd \(fd)) failed: errno \(errno)")
        registration.registeredMask = wanted
    }

    // MARK: Timers

    /// Calls `handler` after `after`, then every `repeating` if given (drift-free; missed
    /// periods are skipped, not queued).
    public func timer(after: Duration, repeating: Duration? = nil, _ handler: @escaping () -> Void) -> LoopTimer {
        let period = repeating.map { max(1, MonotonicTime.nanoseconds($0)) }
        return schedule(deadline: MonotonicTime.now() + MonotonicTime.nanoseconds(after), period: period, handler)
    }

    /// Calls `handler` once at `at` (converted to the loop's CLOCK_MONOTONIC time base).
    public func timer(at: ContinuousClock.Instant, _ handler: @escaping () -> Void) -> LoopTimer {
        let delay = MonotonicTime.nanoseconds(at - ContinuousClock.now)
        return schedule(deadline: MonotonicTime.now() + delay, period: nil, handler)
    }

    private func schedule(deadline: Int64, period: Int64?, _ handler: @escaping () -> Void) -> LoopTimer {
        timerSequence += 1
        let timer = LoopTimer(deadline: deadline, period: period, sequence: timerSequence, loop: self, handler: handler)
        timers.insert(timer)
        return timer
    }

    // MARK: One turn

    private func turn(maxWaitNanoseconds: Int64?) {
        var waitNanoseconds: Int64 = -1
        if let next = timers.first {
            waitNanoseconds = max(0, next.deadline - MonotonicTime.now())
        }
        if let cap = maxWaitNanoseconds, waitNanoseconds < 0 || cap < waitNanoseconds {
            waitNanoseconds = cap
        }
        if !afterQueue.isEmpty { waitNanoseconds = 0 }
        let count = wait(nanoseconds: waitNanoseconds)
        if count > 0 {
            for index in 0..<Int(count) {
                let event = eventBuffer[index]
                dispatch(fd: event.data.fd, mask: event.events)
            }
        } else if count < 0 {
            precondition(errno == EINTR, "epoll_wait failed: errno \(errno)")
        }
        runDueTimers()
        runAfterIteration()
    }

    /// epoll_pwait2 takes a nanosecond timeout (Linux 5.11); epoll_wait's milliseconds
    /// would wake a 1 ms timer up to a millisecond late. Falls back once on ENOSYS.
    private func wait(nanoseconds: Int64) -> Int32 {
        if usePwait2 {
            var timeout = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
            let count = nanoseconds < 0
                ? epoll_pwait2(epollFD, eventBuffer, eventCapacity, nil, nil)
                : epoll_pwait2(epollFD, eventBuffer, eventCapacity, &timeout, nil)
            if count >= 0 || errno != ENOSYS { return count }
            usePwait2 = false
        }
        // Round up so a timer is never woken for before its deadline.
        let milliseconds = nanoseconds < 0 ? -1 : Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
        return epoll_wait(epollFD, eventBuffer, eventCapacity, milliseconds)
    }

    private func dispatch(fd: Int32, mask: UInt32) {
        guard let registration = registrations[fd] else { return }
        var ready: IOEvents = []
        if mask & EPOLLIN.rawValue != 0 { ready.insert(.readable) }
        if mask & EPOLLOUT.rawValue != 0 { ready.insert(.writable) }
        if mask & EPOLLHUP.rawValue != 0 { ready.insert(.hangup) }
        if mask & EPOLLERR.rawValue != 0 { ready.insert(.error) }
        let watches = registration.watches
        for watch in watches where watch.isActive && !watch.interest.isEmpty {
            let delivered = ready.intersection(watch.interest.union([.hangup, .error]))
            if !delivered.isEmpty { watch.handler(delivered) }
        }
    }

    /// While a timer's handler runs, its deadline (CLOCK_MONOTONIC nanoseconds): when the
    /// work it does was due, however late the loop woke for it.
    private var runningTimerDeadline: Int64?

    /// Inside a timer's handler, the instant the timer was due (its deadline, not the time
    /// it actually ran); nil elsewhere. A periodic timer's deadlines lie on its exact grid.
    public var runningTimerDue: ContinuousClock.Instant? {
        guard let deadline = runningTimerDeadline else { return nil }
        return ContinuousClock.now - .nanoseconds(MonotonicTime.now() - deadline)
    }

    private func runDueTimers() {
        guard timers.first != nil else { return }
        let now = MonotonicTime.now()
        while let timer = timers.first, timer.deadline <= now {
            let deadline = timer.deadline
            if let period = timer.period {
                timers.postpone(timer, to: LoopTimer.nextDeadline(after: deadline, period: period, now: now))
            } else {
                timers.remove(timer)
            }
            runningTimerDeadline = deadline
            timer.handler()
            runningTimerDeadline = nil
        }
    }

    private func runAfterIteration() {
        while !afterQueue.isEmpty {
            var batch = afterSpare
            afterSpare = []
            swap(&batch, &afterQueue)
            for job in batch { job.run() }
            batch.removeAll(keepingCapacity: true)
            afterSpare = batch
        }
    }
}

/// A callback queued by `afterIteration`. An array of closures keeps each behind a
/// reabstraction thunk allocated per append; an array of this struct keeps the closure as it is.
struct AfterIterationJob {
    let run: () -> Void
}

/// The registrations by descriptor: an array indexed by the descriptor (descriptors are
/// small and reused lowest first), so the lookup each ready descriptor needs is no hashing.
struct FDTable {
    private var slots: [FDRegistration?] = []

    subscript(fd: Int32) -> FDRegistration? {
        get { fd >= 0 && Int(fd) < slots.count ? slots[Int(fd)] : nil }
        set {
            guard fd >= 0 else { return }
            let index = Int(fd)
            if index >= slots.count {
                guard newValue != nil else { return }
                slots.append(contentsOf: repeatElement(nil, count: index + 1 - slots.count))
            }
            slots[index] = newValue
        }
    }
}

/// The watches sharing one descriptor and the epoll mask currently registered for it
/// (0 = not in the epoll set).
final class FDRegistration {
    var watches: [IOWatch] = []
    var registeredMask: UInt32 = 0
}
