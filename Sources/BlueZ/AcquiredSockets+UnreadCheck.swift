// SPDX-License-Identifier: MIT

internal import DaemonCore
internal import Logging
internal import SystemCalls

/// A central's own notify socket that bluetoothd stopped reading. bluetoothd 5.79 and later
/// send a socket's datagrams to the subscription filed under the address of the link's
/// current ATT peer; a phone that subscribed from a private address and then bonded has its
/// subscription filed under that private address while the link now reports the identity,
/// so bluetoothd finds no record, drops the datagram and removes its read watch: it never
/// reads the socket again, yet keeps it open (docs/bluez-contract.md §12). Nothing tells
/// gattd, and every value for that central (a targeted one too) would be lost in silence.
///
/// What shows it: bytes this end sent stay unread. A check runs `unreadCheck` after a
/// datagram goes out; a socket that still holds unread bytes at a check with nothing sent
/// since the one before (so bluetoothd had a whole interval to read a quiet socket) is
/// taken as abandoned: gattd logs it and closes its end, which ends that central's
/// subscription as gattd reports it (`unsubscribed`, `CentralSubscriptionChanged`) and
/// makes a value for it alone fail as "not subscribed" instead of vanishing. The central
/// gets values again once it subscribes again (a phone does when it reconnects). A socket
/// that streams without a pause is not judged. Shared sockets (up to 5.68) have their own
/// handling (`closeLost`).
extension AcquiredSockets {
    /// How long a quiet socket may keep bytes unread, on the clock that paces notifications.
    /// bluetoothd reads a socket it still watches within milliseconds; 5 s leaves a board
    /// whose bluetoothd is briefly starved of CPU well clear of being judged.
    static let unreadCheck = Duration.seconds(5)

    /// A datagram went out on a central's own socket: counted, and a check armed unless
    /// one is pending. The notification hot path: a test of the socket's `unreadChecked`
    /// (decided when the socket or the model changes, not per datagram), an increment and
    /// a test of the pending check.
    @inline(__always)
    func noteSent(_ attribute: Attribute, _ socket: Socket) {
        guard socket.unreadChecked else { return }
        socket.sentSinceCheck &+= 1
        guard socket.cancelUnreadCheck == nil else { return }
        armUnreadCheck(attribute, socket)
    }

    /// Whether `socket` gets the check: a central's own socket (bluetoothd named the
    /// central), unless this bluetoothd shares one socket among every central (up to 5.68,
    /// where `closeLost` handles a socket it stopped reading). Decided when the socket is
    /// acquired or adopted and again when the model changes: what each datagram tested
    /// before. A check already pending runs as it would have.
    func decideUnreadCheck(_ socket: Socket) {
        socket.unreadChecked = socket.device != nil && model != .shared
    }

    // `unowned`, not `weak`: a weak reference gives the object a side table, and every
    // retain and release of it (each socket on every notification) then takes the slow
    // path. Safe, as `Socket.close()` cancels the check and every socket is closed before
    // it or its owner goes (`closeAll()`; `adopt` cancels the previous owner's check).
    @inline(never)
    private func armUnreadCheck(_ attribute: Attribute, _ socket: Socket) {
        let clock = service.runtime.notifier.clock
        socket.cancelUnreadCheck = clock.at(clock.now() + Self.unreadCheck) { [unowned self, unowned socket] in
            socket.cancelUnreadCheck = nil
            self.checkUnread(attribute, socket)
        }
    }

    private func checkUnread(_ attribute: Attribute, _ socket: Socket) {
        guard notifySockets[attribute.id]?.contains(where: { $0 === socket }) == true else { return }
        let sent = socket.sentSinceCheck
        socket.sentSinceCheck = 0
        guard case .success(let unread) = SeqPacketSocket.unreadByPeer(socket.fd), unread > 0 else { return }
        guard sent == 0 else {
            // Values went out since the last check: bluetoothd gets another quiet interval.
            armUnreadCheck(attribute, socket)
            return
        }
        logger.warning(
            """
            bluetoothd stopped reading a central's notify socket (it subscribed before bonding over a private \
            address?): closed it, so the central counts as unsubscribed until it subscribes again
            """,
            metadata: ["gatt.id": "\(attribute.id)", "device": "\(socket.device ?? "")", "unread": "\(unread)"])
        closeNotify(attribute, socket, why: "bluetoothd stopped reading it")
    }
}
