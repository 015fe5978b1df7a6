// SPDX-License-Identifier: MIT
import Foundation
import Glibc
import Mainloop
import Synchronization
import Testing

@Suite("EventLoop I/O, signals, posts")
struct EventLoopIOTests {
    @Test("a pipe's read end becomes readable after a write, and hangup is reported on close")
    func pipeReadiness() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var received: [UInt8] = []
        var sawHangup = false
        let watch = loop.watch(fd: fds[0], events: .readable) { events in
            if events.contains(.readable) {
                var buffer = [UInt8](repeating: 0, count: 16)
                let n = read(fds[0], &buffer, 16)
                if n > 0 { received += buffer[0..<n] }
            }
            if events.contains(.hangup) { sawHangup = true }
        }
        _ = loop.timer(after: .milliseconds(2)) {
            var bytes: [UInt8] = [1, 2, 3]
            _ = write(fds[1], &bytes, 3)
            close(fds[1])
        }
        #expect(loop.run(until: { sawHangup }, timeout: .seconds(5)))
        #expect(received == [1, 2, 3])
        watch.cancel()
        #expect(!watch.isActive)
    }

    @Test("two watches on one fd get only their own interest; pausing one keeps the other")
    func sharedDescriptor() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var writableCount = 0
        var readableCount = 0
        let writer = loop.watch(fd: fds[0], events: .writable) { events in
            #expect(!events.contains(.readable))
            writableCount += 1
        }
        let reader = loop.watch(fd: fds[0], events: .readable) { events in
            #expect(!events.contains(.writable))
            readableCount += 1
            var byte: UInt8 = 0
            _ = read(fds[0], &byte, 1)
        }
        #expect(loop.run(until: { writableCount > 0 }, timeout: .seconds(5)))
        writer.events = []
        let writesBefore = writableCount
        var byte: UInt8 = 7
        _ = write(fds[1], &byte, 1)
        #expect(loop.run(until: { readableCount == 1 }, timeout: .seconds(5)))
        #expect(writableCount == writesBefore)
        reader.cancel()
        writer.cancel()
    }

    @Test("a raised signal reaches onSignal's handler; a cancelled watch gets nothing")
    func signalDelivery() throws {
        let loop = try EventLoop()
        var count = 0
        var cancelledCount = 0
        let watch = loop.onSignal(SIGUSR2) { count += 1 }
        let other = loop.onSignal(SIGUSR2) { cancelledCount += 1 }
        other.cancel()
        raise(SIGUSR2)
        #expect(loop.run(until: { count == 1 }, timeout: .seconds(5)))
        #expect(cancelledCount == 0)
        watch.cancel()
    }

    @Test("jobs posted from other threads run on the loop thread in order")
    func postFromOtherThread() throws {
        let loop = try EventLoop()
        let loopThread = pthread_self()
        let poster = loop.poster
        let results = Mutex<[Int]>([])
        let ranOnLoopThread = Mutex<Bool?>(nil)
        var seen = 0
        let thread = Thread {
            for value in 0..<100 {
                poster.post { results.withLock { $0.append(value) } }
            }
        }
        thread.start()
        #expect(loop.run(until: {
            seen = results.withLock { $0.count }
            return seen == 100
        }, timeout: .seconds(5)))
        loop.post { ranOnLoopThread.withLock { $0 = pthread_equal(pthread_self(), loopThread) != 0 } }
        #expect(loop.run(until: { ranOnLoopThread.withLock { $0 } != nil }, timeout: .seconds(30)))
        #expect(ranOnLoopThread.withLock { $0 } == true)
        #expect(results.withLock { $0 } == Array(0..<100))
    }

    @Test("poster.stop() from another thread ends run()")
    func stopFromOtherThread() throws {
        let loop = try EventLoop()
        let poster = loop.poster
        let thread = Thread { poster.stop() }
        thread.start()
        loop.run()
        // Reaching this line is the assertion that run() returned; the loop is reusable.
        var again = false
        loop.afterIteration { again = true }
        #expect(loop.run(until: { again }, timeout: .seconds(30)))
    }

    @Test("afterIteration callbacks run after the batch, in order, including ones added while running")
    func afterIterationOrdering() throws {
        let loop = try EventLoop()
        var log: [String] = []
        _ = loop.timer(after: .zero) {
            log.append("timer")
            loop.afterIteration {
                log.append("after-1")
                loop.afterIteration { log.append("after-nested") }
            }
            loop.afterIteration { log.append("after-2") }
        }
        _ = loop.timer(after: .zero) { log.append("timer-2") }
        #expect(loop.run(until: { log.count == 5 }, timeout: .seconds(5)))
        #expect(log == ["timer", "timer-2", "after-1", "after-2", "after-nested"])
    }
}
