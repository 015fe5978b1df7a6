// SPDX-License-Identifier: MIT
@testable import BlueZ
import TestSupport
import Testing

@Suite("RetryBackoff: the BlueZ side's one back-off")
struct RetryBackoffTests {
    /// Retries until `count` ran, each as soon as it is due; returns the delays between them.
    private func delays(_ backoff: RetryBackoff, _ scheduler: ManualScheduler, count: Int) -> [Int] {
        var ran = 0
        var seen: [Int] = []
        for _ in 0..<count {
            backoff.retry { ran += 1 }
            guard let due = scheduler.nextDelay else { return seen }
            seen.append(Int(due.components.seconds))
            scheduler.advance(by: due)
        }
        #expect(ran == count)
        return seen
    }

    @Test("doubles from 1 s to at most 30 s, and starts again at 1 s after a success")
    func doublesAndResets() {
        let scheduler = ManualScheduler()
        let backoff = RetryBackoff(clock: scheduler.clock)
        #expect(delays(backoff, scheduler, count: 7) == [1, 2, 4, 8, 16, 30, 30])
        backoff.succeeded()
        #expect(delays(backoff, scheduler, count: 2) == [1, 2])
    }

    @Test("one retry is pending at a time, and cancel drops it")
    func onePending() {
        let scheduler = ManualScheduler()
        let backoff = RetryBackoff(clock: scheduler.clock)
        var first = 0
        var second = 0
        backoff.retry { first += 1 }
        backoff.retry { second += 1 }
        #expect(scheduler.pendingCount == 1)
        scheduler.advance(by: .seconds(60))
        #expect(first == 0 && second == 1)
        backoff.retry { first += 1 }
        backoff.cancel()
        scheduler.advance(by: .seconds(60))
        #expect(first == 0 && scheduler.pendingCount == 0)
    }
}
