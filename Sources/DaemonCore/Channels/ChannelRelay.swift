// SPDX-License-Identifier: MIT

import Glibc
public import Mainloop
import SystemCalls

/// Copies SDUs between an L2CAP channel and the gattd end of a `SOCK_SEQPACKET` pair, one
/// datagram for one SDU, in both directions, in order, with back-pressure: while one
/// datagram waits for room on its way out, nothing more is read on its way in (the kernel's
/// credits then hold the central back). It ends when either side closes or fails, after
/// what the closing side had sent is passed on where the other side can still take it.
/// Each direction receives into a buffer of its own and sends from it: a datagram costs
/// no allocation and no copy (bench/ceiling/channels, BENCHMARKS.md).
public final class ChannelRelay {
    /// One direction's state.
    private struct Direction {
        /// One byte more than the direction carries, so that a longer datagram is recognisable.
        var buffer: [UInt8]
        /// The length of the datagram in `buffer` waiting for room at the sink; nil when none.
        var pending: Int?
        /// The source hung up: read what it still holds, then end.
        var sourceHungUp = false
        var bytes: UInt64 = 0

        init(carrying limit: Int) {
            buffer = [UInt8](repeating: 0, count: max(limit, 1) + 1)
        }
    }

    public let central: Int32
    public let program: Int32
    private let sendMTU: Int
    private var centralWatch: IOWatch?
    private var programWatch: IOWatch?
    private var toProgram: Direction
    private var toCentral: Direction
    private let finished: (_ reason: String) -> Void
    public private(set) var isOpen = true
    /// Datagrams moved per direction per wake-up, so one busy channel cannot starve the loop.
    private static let batch = 32

    public var bytesFromCentral: UInt64 { toProgram.bytes }
    public var bytesToCentral: UInt64 { toCentral.bytes }

    /// Starts relaying; `finished` runs once, on the loop, when the relay has ended and
    /// closed both descriptors. The relay keeps itself alive (through its loop watches)
    /// until then.
    public init(
        central: Int32, program: Int32, sendMTU: Int, receiveMTU: Int, loop: EventLoop,
        finished: @escaping (_ reason: String) -> Void
    ) {
        self.central = central
        self.program = program
        self.sendMTU = sendMTU
        // The central sends at most the receive MTU (the kernel holds it to it), the program
        // may send at most the send MTU.
        toProgram = Direction(carrying: max(receiveMTU, sendMTU))
        toCentral = Direction(carrying: sendMTU)
        self.finished = finished
        centralWatch = loop.watch(fd: central, events: .readable) { [self] events in
            self.wake(centralEvents: events, programEvents: [])
        }
        programWatch = loop.watch(fd: program, events: .readable) { [self] events in
            self.wake(centralEvents: [], programEvents: events)
        }
    }

    /// Ends the relay now (gattd stops): closes both ends.
    public func close(reason: String) {
        end(reason)
    }

    private func wake(centralEvents: IOEvents, programEvents: IOEvents) {
        guard isOpen else { return }
        if !centralEvents.isDisjoint(with: [.hangup, .error]) { toProgram.sourceHungUp = true }
        if !programEvents.isDisjoint(with: [.hangup, .error]) { toCentral.sourceHungUp = true }
        if let reason = pump(&toProgram, from: central, to: program, limit: Int.max, source: "central", sink: "program")
        {
            return end(reason)
        }
        if let reason = pump(&toCentral, from: program, to: central, limit: sendMTU, source: "program", sink: "central")
        {
            return end(reason)
        }
        // A hung-up source whose data is all passed on, or whose data can no longer go
        // anywhere, ends the channel.
        if toProgram.sourceHungUp, toProgram.pending == nil { return end("the central closed the channel") }
        if toCentral.sourceHungUp, toCentral.pending == nil { return end("the program closed its end") }
        // Watch a source only while its datagram is not waiting, and a sink only while one is;
        // a hung-up source is not watched again (epoll would report it for ever).
        var central: IOEvents = []
        var program: IOEvents = []
        if toProgram.pending == nil, !toProgram.sourceHungUp { central.insert(.readable) }
        if toCentral.pending != nil { central.insert(.writable) }
        if toCentral.pending == nil, !toCentral.sourceHungUp { program.insert(.readable) }
        if toProgram.pending != nil { program.insert(.writable) }
        centralWatch?.events = central
        programWatch?.events = program
    }

    /// Moves datagrams from `source` to `sink`; a reason when the channel must end.
    private func pump(
        _ direction: inout Direction, from source: Int32, to sink: Int32, limit: Int, source sourceName: String,
        sink sinkName: String
    ) -> String? {
        var moved = 0
        // A hung-up source is not watched: drain it now, as far as the sink takes it.
        while direction.sourceHungUp || moved < Self.batch {
            moved += 1
            if direction.pending == nil {
                // `count` is the datagram's real length (MSG_TRUNC), also when it is longer than the buffer.
                let result = direction.buffer.withUnsafeMutableBytes { SeqPacketSocket.receive(source, into: $0) }
                switch result {
                case .datagram(let count):
                    if count == 0 { continue }  // An empty SDU carries nothing to pass on.
                    if count > limit {
                        return "the \(sourceName) sent \(count) bytes in one datagram, more than the central's MTU "
                            + "of \(limit) bytes (one datagram is one SDU)"
                    }
                    if count >= direction.buffer.count {
                        return "the \(sourceName) sent a datagram of \(count) bytes, more than the channel carries"
                    }
                    direction.pending = count
                case .wouldBlock:
                    return nil
                case .closed:
                    direction.sourceHungUp = true
                    return nil
                case .failed(let error):
                    if direction.sourceHungUp || error.code == ENOTCONN || error.code == ECONNRESET {
                        direction.sourceHungUp = true
                        return nil
                    }
                    return "reading from the \(sourceName) failed: \(error)"
                }
            }
            guard let count = direction.pending else { return nil }
            let sent = direction.buffer.withUnsafeBytes {
                SeqPacketSocket.send(sink, UnsafeRawBufferPointer(rebasing: $0[..<count]))
            }
            switch sent {
            case .sent:
                direction.bytes += UInt64(count)
                direction.pending = nil
            case .wouldBlock:
                return nil
            case .closed:
                return sinkName == "central" ? "the central closed the channel" : "the program closed its end"
            case .failed(let error):
                if error.code == ENOTCONN { return "the central closed the channel" }
                return "sending to the \(sinkName) failed: \(error)"
            }
        }
        return nil
    }

    private func end(_ reason: String) {
        guard isOpen else { return }
        isOpen = false
        centralWatch?.cancel()
        centralWatch = nil
        programWatch?.cancel()
        programWatch = nil
        SeqPacketSocket.close(central)
        SeqPacketSocket.close(program)
        finished(reason)
    }
}
