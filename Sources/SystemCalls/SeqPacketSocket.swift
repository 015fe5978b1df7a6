// SPDX-License-Identifier: MIT

internal import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// One end of a connected `AF_UNIX`/`SOCK_SEQPACKET` pair: datagrams that keep their
/// boundaries, in order. gattd hands the other end to bluetoothd (`AcquireNotify`,
/// `AcquireWrite`). Non-blocking and close-on-exec; the owner closes it.
public enum SeqPacketSocket {
    /// A connected pair, both ends non-blocking and close-on-exec.
    public static func pair() throws(SystemCallError) -> (Int32, Int32) {
        var ends: [Int32] = [-1, -1]
        let type = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        try SystemCall.check("socketpair") { socketpair(AF_UNIX, type, 0, &ends) }
        return (ends[0], ends[1])
    }

    /// Closes one end (the peer then sees it hang up).
    public static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }

    /// What `send` did.
    public enum SendResult: Equatable, Sendable {
        case sent
        /// The peer's receive queue is full (it is not reading).
        case wouldBlock
        /// The peer closed its end.
        case closed
        case failed(SystemCallError)
    }

    /// Sends `bytes` as one datagram without blocking (and without SIGPIPE).
    public static func send(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> SendResult {
        let result = SystemCall.retrying {
            Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
        if result >= 0 { return .sent }
        switch errno {
        case EAGAIN: return .wouldBlock
        case EPIPE, ECONNRESET, ENOTCONN: return .closed
        case let code: return .failed(SystemCallError(operation: "send", code: code))
        }
    }

    /// How many bytes sent on `descriptor` the peer has not read yet (`SIOCOUTQ`; kernel
    /// accounting, so only zero or not is meaningful). Data queued for a peer stays
    /// readable after this end closes, so it tells when closing loses nothing.
    public static func unreadByPeer(_ descriptor: Int32) -> Result<Int, SystemCallError> {
        var bytes: Int32 = 0
        guard clinux_unread_by_peer(descriptor, &bytes) == 0 else {
            return .failure(SystemCallError(operation: "ioctl(SIOCOUTQ)", code: errno))
        }
        return .success(Int(bytes))
    }

    /// What `receive` found.
    public enum ReceiveResult: Equatable, Sendable {
        /// A datagram of `count` bytes, the first `min(count, buffer.count)` of them in the
        /// buffer (`count` is its real length, so a longer one is recognisable).
        case datagram(count: Int)
        /// Nothing waiting.
        case wouldBlock
        /// The peer closed its end and every datagram has been read.
        case closed
        case failed(SystemCallError)
    }

    /// Whether the other end is closed.
    public static func peerHungUp(_ descriptor: Int32) -> Bool {
        let readHangUp: Int16 = 0x2000  // POLLRDHUP, which Glibc's module leaves out (_GNU_SOURCE)
        var entry = pollfd(fd: descriptor, events: readHangUp, revents: 0)
        let ready = SystemCall.retrying { poll(&entry, 1, 0) }
        return ready > 0 && entry.revents & (readHangUp | Int16(POLLHUP | POLLERR)) != 0
    }

    /// Receives one datagram into `buffer` without blocking.
    public static func receive(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> ReceiveResult {
        // MSG_TRUNC: the datagram's real length, even when the buffer is shorter.
        let result = SystemCall.retrying {
            recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT | MSG_TRUNC))
        }
        if result > 0 { return .datagram(count: result) }
        // 0 is both an empty datagram and the end: the peer's hang-up tells them apart.
        if result == 0 { return peerHungUp(descriptor) ? .closed : .datagram(count: 0) }
        switch errno {
        case EAGAIN: return .wouldBlock
        case ECONNRESET: return .closed
        case let code: return .failed(SystemCallError(operation: "recv", code: code))
        }
    }
}
