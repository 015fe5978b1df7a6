// SPDX-License-Identifier: MIT

internal import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's L2CAP LE credit-based channels (`AF_BLUETOOTH`/`SOCK_SEQPACKET`/
/// `BTPROTO_L2CAP` bound with an LE address type): a bound socket that holds a PSM, the
/// listener it becomes, its channels and what they say about themselves. Every descriptor is non-blocking and close-on-exec;
/// the owner closes it (`SeqPacketSocket.close`). docs/channels.md has the kernel's rules.
public enum L2CAPSocket {
    /// An LE address as the kernel gives it (`accept`, `getpeername`).
    public struct Peer: Sendable, Equatable {
        /// `AA:BB:CC:DD:EE:FF`, most significant byte first (as bluetoothd's `Address`).
        public var address: String
        /// `public` or `random` (bluetoothd's `AddressType`).
        public var addressType: String
        public var psm: UInt16
    }

    /// A socket bound to `psm` (0: the kernel picks one of 0x80...0xFF) that demands
    /// `security` (`BT_SECURITY` level 1...4) of a central's link; `receiveMTU` is
    /// `BT_RCVMTU`, the largest SDU a central may send. Bound and not listening, it holds
    /// the PSM (another program's bind gets `EADDRINUSE`) while the kernel answers a
    /// central's request for it "PSM not supported" (0x0002): it looks only for listening
    /// sockets. `startListening` makes it take channels. No `BT_DEFER_SETUP`: the kernel
    /// closes a deferred channel 40 s after the request (docs/channels.md).
    /// - Throws: the step that failed (`socket` fails with `EAFNOSUPPORT` outside the
    ///   host's network namespace or where the kernel has no Bluetooth).
    public static func bind(psm: UInt16, security: UInt8, receiveMTU: UInt16) throws(SystemCallError) -> Int32 {
        let fd = try SystemCall.check("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)") { clinux_l2cap_socket() }
        do throws(SystemCallError) {
            // Bound first: the LE address type is what makes BT_RCVMTU valid.
            try SystemCall.check("bind(PSM 0x\(String(psm, radix: 16)))") { clinux_l2cap_bind_le(fd, psm) }
            try SystemCall.check("setsockopt(BT_SECURITY)") { clinux_l2cap_set_security(fd, security) }
            try SystemCall.check("setsockopt(BT_RCVMTU)") { clinux_l2cap_set_receive_mtu(fd, receiveMTU) }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// Makes a socket from `bind` a listener: from now on the kernel accepts each channel a
    /// central asks for (at the socket's security) and `accept` hands it over, connected.
    public static func startListening(_ fd: Int32, backlog: Int32 = 8) throws(SystemCallError) {
        try SystemCall.check("listen") { Glibc.listen(fd, backlog) }
    }

    /// The PSM a listener is bound to (`getsockname`).
    public static func boundPSM(_ fd: Int32) throws(SystemCallError) -> UInt16 {
        var name = clinux_l2cap_address()
        try SystemCall.check("getsockname") { clinux_l2cap_name(fd, 0, &name) }
        return name.psm
    }

    /// The next channel the kernel has accepted (connected: the central has its answer), or
    /// nil when none waits (`EAGAIN`).
    public static func accept(_ listener: Int32) throws(SystemCallError) -> (fd: Int32, peer: Peer)? {
        var raw = clinux_l2cap_address()
        let fd = SystemCall.retrying { clinux_l2cap_accept(listener, &raw) }
        if fd < 0 {
            if errno == EAGAIN || errno == ECONNABORTED { return nil }
            throw SystemCallError(operation: "accept", code: errno)
        }
        return (fd, peer(raw))
    }

    /// Ends a connected channel for every holder of it (a taker given a copy of the
    /// descriptor too): the kernel disconnects it, as gattd's refusal of a channel it has
    /// already accepted. The caller still closes its descriptor.
    public static func disconnect(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Makes a channel's receive buffer hold `bytes` (the kernel counts each queued PDU's
    /// whole buffer, several times its payload). Before Linux 6.10 the kernel grants the
    /// central credits as SDUs arrive, not as they are read, and drops an SDU that no longer
    /// fits this buffer without a word: the buffer is what a reader that falls behind (not
    /// scheduled for a while, or a slow program) has before data is lost. `SO_RCVBUFFORCE`
    /// where gattd may (`CAP_NET_ADMIN`), else `SO_RCVBUF`, which the kernel caps at
    /// `net.core.rmem_max`. Returns the size the kernel then reports (`SO_RCVBUF`), or nil
    /// when it cannot be read.
    @discardableResult
    public static func reserveReceiveBuffer(_ fd: Int32, bytes: Int32) -> Int? {
        var size = bytes
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
        var actual: Int32 = 0
        var actualLength = length
        guard getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &actual, &actualLength) == 0 else { return nil }
        return Int(actual)
    }

    /// `BT_SNDMTU` (the largest SDU the central takes) and `BT_RCVMTU` of a channel.
    public static func mtus(_ fd: Int32) -> (send: Int, receive: Int) {
        (Int(clinux_l2cap_mtu(fd, 1)), Int(clinux_l2cap_mtu(fd, 0)))
    }

    static func peer(_ raw: clinux_l2cap_address) -> Peer {
        let bytes = withUnsafeBytes(of: raw.address) { Array($0) }
        let address = bytes.reversed().map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return text.count == 1 ? "0" + text : text
        }.joined(separator: ":")
        let type = raw.type == UInt8(CLINUX_BDADDR_LE_RANDOM) ? "random" : "public"
        return Peer(address: address, addressType: type, psm: raw.psm)
    }
}
