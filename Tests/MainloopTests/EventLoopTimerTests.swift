// SPDX-License-Identifier: MIT
import Glibc
import Mainloop
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

    @Test("a repeating timer does not drift: firings track elapsed monotonic time")
    func repeatingNoDrift() throws {
        let loop = try EventLoop()
        // 1.5 ms is not a whole number of epoll milliseconds, so a drifting implementation
        // (next = now + period) would lose ~0.5 ms per firing: ~400 ms for 200 firings.
        let period = Duration.microseconds(1500)
        var count = 0
        let start = ContinuousClock.now
        let timer = loop.timer(after: period, repeating: period) { count += 1 }
        #expect(loop.run(until: { count >= 200 }, timeout: .seconds(10)))
        let elapsed = ContinuousClock.now - start
        timer.cancel()
        // Never more firings than whole periods elapsed ...
        #expect(count <= Int(elapsed / period) + 1)
        // ... and the 200th firing is close to 200 periods (300 ms) after the start.
        #expect(elapsed < period * 200 + .milliseconds(60), "elapsed \(elapsed)")
    }

    @Test("a repeating timer late by many periods fires once, not once per missed period")
    func repeatingCoalescesMissedPeriods() throws {
        let loop = try EventLoop()
        let period = Duration.milliseconds(5)
        var firings: [ContinuousClock.Instant] = []
        var stallEnd: ContinuousClock.Instant?
        let timer = loop.timer(after: period, repeating: period) {
            firings.append(.now)
            if firings.count == 3 {
                // Keep the loop thread busy for 10 periods (a stall, not synchronisation).
                let busyUntil = ContinuousClock.now + period * 10
                while ContinuousClock.now < busyUntil {}
                stallEnd = .now
            }
        }
        #expect(loop.run(until: { firings.count >= 8 }, timeout: .seconds(10)))
        timer.cancel()
        let end = try #require(stallEnd)
        // Catch-up would fire ~10 times right after the stall; skipping fires at most
        // once per period slot in the window that follows.
        let burst = firings.filter { $0 >= end && $0 < end + period * 2 }.count
        #expect(burst <= 2, "\(burst) firings within two periods after the stall")
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
