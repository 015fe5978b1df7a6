// SPDX-License-Identifier: MIT
import Glibc
@testable import Mainloop
import Testing

@Suite("EventLoop timers")
struct EventLoopTimerTests {
    @Test("one-shot timers fire in deadline order, ties in creation order")
    func timerOrdering() throws {
        let loop = try EventLoop()
        var fired: [String] = []
        _ = loop.timer(after: .milliseconds(30)) { fired.append("30ms") }
        _ = loop.timer(after: .milliseconds(10)) { fired.append("10ms-a") }
        _ = loop.timer(after: .milliseconds(10)) { fired.append("10ms-b") }
        _ = loop.timer(at: .now + .milliseconds(20)) { fired.append("20ms") }
        let done = loop.run(until: { fired.count == 4 }, timeout: .seconds(5))
        #expect(done)
        #expect(fired == ["10ms-a", "10ms-b", "20ms", "30ms"])
    }

    @Test("a timer does not fire before its deadline")
    func notEarly() throws {
        let loop = try EventLoop()
        let start = ContinuousClock.now
        var firedAfter: Duration?
        let timer = loop.timer(after: .milliseconds(25)) { firedAfter = ContinuousClock.now - start }
        #expect(loop.run(until: { firedAfter != nil }, timeout: .seconds(5)))
        #expect(try #require(firedAfter) >= .milliseconds(25))
        #expect(!timer.isActive)
    }

    @Test("a repeating timer keeps its phase: the next deadline is the previous one plus the period")
    func repeatingNoDrift() {
        // Woken late by 0.4 ms: the next deadline stays on the 1.5 ms grid (no drift).
        #expect(LoopTimer.nextDeadline(after: 1_500_000, period: 1_500_000, now: 1_900_000) == 3_000_000)
        // Woken exactly on time.
        #expect(LoopTimer.nextDeadline(after: 1_500_000, period: 1_500_000, now: 1_500_000) == 3_000_000)
    }

    @Test("inside a timer's handler runningTimerDue is its deadline on the grid, however late it ran; nil elsewhere")
    func runningTimerDueIsTheDeadline() throws {
        let loop = try EventLoop()
        var dues: [ContinuousClock.Instant] = []
        var ranLate: [Duration] = []
        let timer = loop.timer(after: .milliseconds(5), repeating: .milliseconds(5)) {
            let due = loop.runningTimerDue!
            dues.append(due)
            ranLate.append(ContinuousClock.now - due)
            if dues.count == 2 {
                // A slow handler: the next tick runs late, but is due on the grid.
                let until = ContinuousClock.now + .milliseconds(3)
                while ContinuousClock.now < until {}
            }
        }
        #expect(loop.runningTimerDue == nil)
        #expect(loop.run(until: { dues.count == 6 }, timeout: .seconds(5)))
        timer.cancel()
        #expect(loop.runningTimerDue == nil)
        for (a, b) in zip(dues, dues.dropFirst()) {
            // On the 5 ms grid to within the two clocks' conversion (microseconds), not
            // drifting. A loop held off the CPU for longer than a period skips the slots it
            // missed (see the next test), so two ticks may be several periods apart.
            let apart: Duration = b - a
            let periods = Int((apart / .milliseconds(5)).rounded())
            let error = apart - .milliseconds(5) * periods
            #expect(
                periods >= 1 && error < .microseconds(50) && error > .microseconds(-50), "ticks due \(apart) apart")
        }
        #expect(ranLate.allSatisfy { $0 >= .zero })
    }

    @Test("a repeating timer late by many periods fires once, not once per missed period")
    func repeatingCoalescesMissedPeriods() {
        // Deadline 5 ms, period 5 ms, the loop stalled until 57 ms: the missed slots 10...55
        // are skipped and the next firing is the first future slot of the same phase.
        #expect(LoopTimer.nextDeadline(after: 5_000_000, period: 5_000_000, now: 57_000_000) == 60_000_000)
        // Exactly on a slot boundary: that slot has passed, the next one is used.
        #expect(LoopTimer.nextDeadline(after: 5_000_000, period: 5_000_000, now: 10_000_000) == 15_000_000)
    }

    @Test("a repeating timer keeps firing on the loop until cancelled")
    func repeatingFires() throws {
        let loop = try EventLoop()
        var count = 0
        let timer = loop.timer(after: .milliseconds(1), repeating: .milliseconds(1)) { count += 1 }
        #expect(loop.run(until: { count >= 20 }, timeout: .seconds(20)))
        timer.cancel()
        let fired = count
        _ = loop.run(until: { false }, timeout: .milliseconds(20))
        #expect(count == fired, "a cancelled repeating timer fired again")
    }

    @Test("a cancelled timer never fires; cancelling from its own handler stops repetition")
    func cancellation() throws {
        let loop = try EventLoop()
        var cancelledFired = false
        var repeats = 0
        var sentinel = false
        let doomed = loop.timer(after: .milliseconds(1)) { cancelledFired = true }
        doomed.cancel()
        var selfCancelling: LoopTimer?
        selfCancelling = loop.timer(after: .milliseconds(1), repeating: .milliseconds(1)) {
            repeats += 1
            selfCancelling?.cancel()
        }
        _ = loop.timer(after: .milliseconds(20)) { sentinel = true }
        #expect(loop.run(until: { sentinel }, timeout: .seconds(5)))
        #expect(!cancelledFired)
        #expect(repeats == 1)
        #expect(!doomed.isActive)
    }
}
