// SPDX-License-Identifier: MIT

import DaemonCore
import Glibc
import Mainloop
import SystemCalls
import Testing

/// `ChannelRelay` between two `SOCK_SEQPACKET` pairs: the test holds the central's and the
/// program's far ends (an L2CAP channel is a `SOCK_SEQPACKET` socket too).
@Suite("Channel relay")
struct ChannelRelayTests {
    final class Ends {
        let central: (test: Int32, relay: Int32)
        let program: (test: Int32, relay: Int32)
        init() throws {
            let c = try SeqPacketSocket.pair()
            let p = try SeqPacketSocket.pair()
            central = (c.0, c.1)
            program = (p.0, p.1)
        }
        deinit {
            SeqPacketSocket.close(central.test)
            SeqPacketSocket.close(program.test)
        }
    }

    /// Datagram `index`: its number, then `length - 4` bytes derived from it.
    static func datagram(_ index: Int, length: Int) -> [UInt8] {
        var bytes = withUnsafeBytes(of: UInt32(index).littleEndian) { Array($0) }
        bytes += (0..<(length - 4)).map { UInt8(truncatingIfNeeded: index &+ $0) }
        return bytes
    }

    static func length(_ index: Int) -> Int { 4 + (index * 37) % 1000 }

    /// Sends datagrams 0..<count on `fd` as the loop lets it, checks every one received on
    /// `from` in order; returns the number received intact.
    final class Stream {
        let count: Int
        var sent = 0
        var received = 0
        var broken: String?
        var watches: [IOWatch] = []
        init(count: Int, send fd: Int32, receive from: Int32, loop: EventLoop) {
            self.count = count
            watches.append(
                loop.watch(fd: fd, events: .writable) { [unowned self] _ in
                    while self.sent < self.count {
                        let bytes = ChannelRelayTests.datagram(self.sent, length: ChannelRelayTests.length(self.sent))
                        if bytes.withUnsafeBytes({ SeqPacketSocket.send(fd, $0) }) != .sent { return }
                        self.sent += 1
                    }
                    self.watches[0].events = []
                })
            var buffer = [UInt8](repeating: 0, count: 2048)
            watches.append(
                loop.watch(fd: from, events: .readable) { [unowned self] _ in
                    while true {
                        let result = buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(from, into: $0) }
                        guard case .datagram(let length) = result else { return }
                        let expected = ChannelRelayTests.datagram(self.received, length: ChannelRelayTests.length(self.received))
                        if Array(buffer[..<length]) != expected, self.broken == nil {
                            self.broken = "datagram \(self.received) differs"
                        }
                        self.received += 1
                    }
                })
        }
    }

    /// Runs `loop` until `done`; false only when `progress` stood still for `stall`. The
    /// bound is on a stall, not on the whole transfer, which under qemu-user on a loaded
    /// machine can take minutes.
    static func run(
        _ loop: EventLoop, until done: () -> Bool, stall: Duration = .seconds(30), progress: @escaping () -> Int
    ) -> Bool {
        var last = progress()
        var quiet = Duration.zero
        var stalled = false
        let tick = loop.timer(after: .seconds(1), repeating: .seconds(1)) {
            let now = progress()
            if now != last {
                last = now
                quiet = .zero
            } else {
                quiet += .seconds(1)
                stalled = quiet >= stall
            }
        }
        defer { tick.cancel() }
        while !done(), !stalled {
            _ = loop.run(until: { done() || stalled }, timeout: .seconds(3600))
        }
        return done()
    }

    @Test("both ways at once: every datagram, in order, with back-pressure; bytes counted")
    func bothWays() throws {
        let loop = try EventLoop()
        let ends = try Ends()
        var reason: String?
        let relay = ChannelRelay(
            central: ends.central.relay, program: ends.program.relay, sendMTU: 1024, receiveMTU: 1024, loop: loop
        ) { reason = $0 }
        // About 2 MB each way, ten times what a socket pair's queue holds.
        let count = 4000
        let up = Stream(count: count, send: ends.central.test, receive: ends.program.test, loop: loop)
        let down = Stream(count: count, send: ends.program.test, receive: ends.central.test, loop: loop)
        #expect(
            Self.run(
                loop, until: { up.received == count && down.received == count },
                progress: { up.sent + up.received + down.sent + down.received }))
        #expect(up.broken == nil && down.broken == nil)
        let total = UInt64((0..<count).reduce(0) { $0 + Self.length($1) })
        #expect(relay.bytesFromCentral == total && relay.bytesToCentral == total)
        #expect(reason == nil && relay.isOpen)
        relay.close(reason: "test ends")
        #expect(reason == "test ends")
    }

    @Test("the central closes after sending: the program gets all of it, then the end")
    func centralCloses() throws {
        let loop = try EventLoop()
        let ends = try Ends()
        var reason: String?
        _ = ChannelRelay(
            central: ends.central.relay, program: ends.program.relay, sendMTU: 1024, receiveMTU: 1024, loop: loop
        ) { reason = $0 }
        for index in 0..<50 {
            let bytes = Self.datagram(index, length: 500)
            #expect(bytes.withUnsafeBytes { SeqPacketSocket.send(ends.central.test, $0) } == .sent)
        }
        shutdown(ends.central.test, Int32(SHUT_RDWR))
        // The program reads only now: everything waited in the relay or the queues.
        var received: [[UInt8]] = []
        var ended = false
        var buffer = [UInt8](repeating: 0, count: 2048)
        let watch = loop.watch(fd: ends.program.test, events: .readable) { _ in
            while true {
                switch buffer.withUnsafeMutableBytes({ SeqPacketSocket.receive(ends.program.test, into: $0) }) {
                case .datagram(let length): received.append(Array(buffer[..<length]))
                case .closed: ended = true; return
                default: return
                }
            }
        }
        #expect(loop.run(until: { ended }, timeout: .seconds(10)))
        watch.cancel()
        #expect(received == (0..<50).map { Self.datagram($0, length: 500) })
        #expect(reason == "the central closed the channel")
    }

    @Test("the program closes its end: the central sees the channel close")
    func programCloses() throws {
        let loop = try EventLoop()
        let ends = try Ends()
        var reason: String?
        _ = ChannelRelay(
            central: ends.central.relay, program: ends.program.relay, sendMTU: 1024, receiveMTU: 1024, loop: loop
        ) { reason = $0 }
        #expect([UInt8]([1, 2, 3]).withUnsafeBytes { SeqPacketSocket.send(ends.program.test, $0) } == .sent)
        shutdown(ends.program.test, Int32(SHUT_RDWR))
        #expect(loop.run(until: { reason != nil }, timeout: .seconds(10)))
        #expect(reason == "the program closed its end")
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(ends.central.test, into: $0) } == .datagram(count: 3))
        #expect(buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(ends.central.test, into: $0) } == .closed)
    }

    @Test("a datagram longer than the central's MTU ends the channel, naming it")
    func overMTU() throws {
        let loop = try EventLoop()
        let ends = try Ends()
        var reason: String?
        _ = ChannelRelay(
            central: ends.central.relay, program: ends.program.relay, sendMTU: 100, receiveMTU: 1024, loop: loop
        ) { reason = $0 }
        let big = [UInt8](repeating: 7, count: 101)
        #expect(big.withUnsafeBytes { SeqPacketSocket.send(ends.program.test, $0) } == .sent)
        #expect(loop.run(until: { reason != nil }, timeout: .seconds(10)))
        #expect(
            reason == "the program sent 101 bytes in one datagram, more than the central's MTU of 100 bytes "
                + "(one datagram is one SDU)")
        var buffer = [UInt8](repeating: 0, count: 200)
        #expect(buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(ends.central.test, into: $0) } == .closed)
    }

    @Test("a datagram longer than the channel carries ends it, naming its real length")
    func overReceiveMTU() throws {
        let loop = try EventLoop()
        let ends = try Ends()
        var reason: String?
        _ = ChannelRelay(
            central: ends.central.relay, program: ends.program.relay, sendMTU: 100, receiveMTU: 1024, loop: loop
        ) { reason = $0 }
        // What fits first: it reaches the program whole; then one byte too many.
        let fits = [UInt8](repeating: 1, count: 1024)
        #expect(fits.withUnsafeBytes { SeqPacketSocket.send(ends.central.test, $0) } == .sent)
        var buffer = [UInt8](repeating: 0, count: 2048)
        #expect(loop.run(until: { Self.readable(ends.program.test) }, timeout: .seconds(10)))
        let received = buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(ends.program.test, into: $0) }
        #expect(received == .datagram(count: 1024))
        #expect(Array(buffer[..<1024]) == fits)
        let big = [UInt8](repeating: 2, count: 1500)
        #expect(big.withUnsafeBytes { SeqPacketSocket.send(ends.central.test, $0) } == .sent)
        #expect(loop.run(until: { reason != nil }, timeout: .seconds(10)))
        #expect(reason == "the central sent a datagram of 1500 bytes, more than the channel carries")
    }

    static func readable(_ fd: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    @Test("an accepted channel's receive buffer grows to what gattd asks, as far as the kernel lets it")
    func receiveBuffer() throws {
        let ends = try Ends()
        defer {
            SeqPacketSocket.close(ends.central.relay)
            SeqPacketSocket.close(ends.program.relay)
        }
        var before: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(ends.central.relay, SOL_SOCKET, SO_RCVBUF, &before, &length) == 0)
        // The kernel doubles what it is given (its bookkeeping) and caps SO_RCVBUF at
        // net.core.rmem_max unless SO_RCVBUFFORCE is allowed; it never shrinks one below the default.
        var rmemMax = Int.max
        if let text = try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8),
            let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            rmemMax = value
        }
        let asked = ChannelServer.receiveBufferBytes
        let reported = try #require(L2CAPSocket.reserveReceiveBuffer(ends.central.relay, bytes: asked))
        // SO_RCVBUFFORCE (CAP_NET_ADMIN) gets all of it; SO_RCVBUF as much as rmem_max allows.
        let possible = [2 * Int(asked), 2 * min(Int(asked), rmemMax)].map { max($0, Int(before)) }
        #expect(possible.contains(reported))
    }
}
