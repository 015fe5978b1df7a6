// SPDX-License-Identifier: MIT

import DaemonCore
import TestSupport
import Testing

/// The test kit's scheduler keeps the promises the suites build on.
@Suite("ManualScheduler: the loop's timing, played by hand")
struct ManualSchedulerTests {
    @Test("one-shot and repeating timers run in deadline order, with now and due at each deadline")
    func deadlineOrder() {
        let scheduler = ManualScheduler()
        let start = scheduler.now
        var ran: [String] = []
        let clock = scheduler.clock
        func note(_ name: String) {
            ran.append("\(name)@\((clock.now() - start).components.seconds)")
            #expect(clock.due() == clock.now())
        }
        _ = clock.at(start + .seconds(3)) { note("c") }
        _ = clock.at(start + .seconds(1)) { note("a") }
        _ = scheduler.updateTimers.repeating(.seconds(1), .seconds(2)) { note("r") }
        _ = clock.at(start + .seconds(1)) { note("b") }
        scheduler.advance(by: .milliseconds(999))
        #expect(ran.isEmpty, "nothing is due before its deadline")
        scheduler.advance(by: .seconds(4) + .milliseconds(1))
        #expect(ran == ["a@1", "r@1", "b@1", "c@3", "r@3", "r@5"], "equal deadlines in the order started")
        #expect(scheduler.now == start + .seconds(5))
        #expect(scheduler.pendingCount == 1, "only the repeating timer is left")
        #expect(scheduler.nextDelay == .seconds(2))
        #expect(scheduler.repeatingPeriods == [.seconds(2)])
    }

    @Test("a cancelled timer never runs; a repeating one may cancel itself from its tick")
    func cancel() {
        let scheduler = ManualScheduler()
        var ran = 0
        let cancel = scheduler.clock.at(scheduler.now + .seconds(1)) { ran += 100 }
        cancel()
        var stop: (() -> Void)?
        stop = scheduler.updateTimers.repeating(.zero, .seconds(1)) {
            ran += 1
            if ran == 3 { stop?() }
        }
        scheduler.advance(by: .seconds(10))
        #expect(ran == 3)
        #expect(scheduler.pendingCount == 0)
    }

    @Test("a late tick reports its own deadline as due; after-iteration work waits for endIteration")
    func dueAndIterations() {
        let scheduler = ManualScheduler()
        let due = scheduler.now
        scheduler.advance(by: .milliseconds(30))
        scheduler.tick(dueAt: due) { #expect(scheduler.clock.due() == due) }
        #expect(scheduler.clock.due() == scheduler.now)

        var order: [String] = []
        let persistence = scheduler.persistenceScheduling
        persistence.afterIteration {
            order.append("first")
            persistence.afterIteration { order.append("next iteration") }
        }
        persistence.after(.seconds(1)) { order.append("delayed") }
        #expect(scheduler.pendingAfterIteration == 1)
        scheduler.endIteration()
        #expect(order == ["first"])
        scheduler.endIteration()
        #expect(order == ["first", "next iteration"])
        scheduler.advance(by: .seconds(1))
        #expect(order == ["first", "next iteration", "delayed"])
    }
}
