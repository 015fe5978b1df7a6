// SPDX-License-Identifier: MIT
import CLinux
import Glibc
import Synchronization

/// The thread-safe side of an `EventLoop`: queues jobs and stop requests from any thread
/// and wakes the loop through an eventfd.
///
/// `EventLoop` is not `Sendable`, so code on another thread holds this instead (get it from
/// `EventLoop.poster` before handing it over). Jobs run on the loop's thread, in the order
/// they were posted, during the loop's next turn. The eventfd is written only when the queue
/// goes from empty to non-empty, so a burst of posts costs one wake-up.
public final class LoopPoster: Sendable {
    struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopRequested = false
    }

    let eventFD: Int32
    private let state = Mutex(State())

    init() throws(LoopError) {
        let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fd >= 0 else { throw LoopError(operation: "eventfd", code: errno) }
        eventFD = fd
    }

    deinit { close(eventFD) }

    /// Queues `job` to run on the loop's thread.
    public func post(_ job: @escaping @Sendable () -> Void) {
        let wake = state.withLock { state in
            state.jobs.append(job)
            return state.jobs.count == 1
        }
        if wake { signalLoop() }
    }

    /// Asks the loop to return from `run()` at the end of its current turn.
    public func stop() {
        state.withLock { $0.stopRequested = true }
        signalLoop()
    }

    private func signalLoop() {
        var one: UInt64 = 1
        _ = write(eventFD, &one, 8)
    }

    /// Called by the loop when the eventfd is readable: resets it and takes the queue.
    func drain() -> (jobs: [@Sendable () -> Void], stop: Bool) {
        var counter: UInt64 = 0
        _ = read(eventFD, &counter, 8)
        return state.withLock { state in
            let taken = (state.jobs, state.stopRequested)
            state.jobs = []
            state.stopRequested = false
            return taken
        }
    }
}
