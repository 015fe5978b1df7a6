// SPDX-License-Identifier: MIT
import BlueZ
import DBusKit
import DaemonCore
import Glibc
import TestSupport
import Testing

private let characteristic = "org.bluez.GattCharacteristic1"
private let streamUUID = "12345678-1234-5678-1234-56789abc0001"
private let commandUUID = "12345678-1234-5678-1234-56789abc0002"
private let plainUUID = "12345678-1234-5678-1234-56789abc0003"
private let device = "/org/bluez/hci0/dev_00_11_22_33_44_77"

private let socketsConfiguration = """
    {"version": 1, "services": [
      {"id": "s", "uuid": "12345678-1234-5678-1234-56789abc0000", "characteristics": [
        {"id": "stream", "uuid": "12345678-1234-5678-1234-56789abc0001", "flags": ["read", "notify"],
         "value": {"hex": "00"}, "acquireNotify": true},
        {"id": "command", "uuid": "12345678-1234-5678-1234-56789abc0002",
         "flags": ["read", "write-without-response"], "value": {"hex": "00"}, "minLength": 1, "maxLength": 4,
         "acquireWrite": true},
        {"id": "plain", "uuid": "12345678-1234-5678-1234-56789abc0003", "flags": ["read", "notify"],
         "value": {"hex": "00"}}]}]}
    """

/// gattd registered with the stand-in bluetoothd; the test acquires sockets as bluetoothd does.
private struct SocketSession {
    let f: BlueZFixture
    let bluez: FakeBlueZ
    let tree: [FakeBlueZ.TreeObject]

    init() throws {
        f = try BlueZFixture(configurationText: socketsConfiguration)
        bluez = try f.startBlueZ()
        guard f.startRegistered() else { throw BlueZFixture.FixtureError(description: "not registered") }
        tree = try #require(bluez.adapters["hci0"]?.application)
    }

    func properties(_ uuid: String) throws -> [String: DBusValue] {
        try #require(tree.object(characteristic, uuid: uuid)?.interfaces[characteristic])
    }

    /// `member` (AcquireNotify or AcquireWrite) from `caller` (bluetoothd by default): the
    /// descriptor and MTU of the reply, or its error. Without `naming` the options leave the
    /// device out, which makes a notify socket a shared one.
    func acquire(
        _ uuid: String, _ member: String, mtu: UInt16 = 185, from caller: BusConnection? = nil, naming: Bool = true
    ) throws -> Result<(Int32, UInt16), DBusError> {
        let path = objectPath(try #require(tree.object(characteristic, uuid: uuid)).path)
        var options: [(String, DBusValue)] = [("link", .string("LE")), ("mtu", .uint16(mtu))]
        if naming { options.insert(("device", .objectPath(objectPath(device))), at: 0) }
        let reply = try #require(call(f, caller ?? bluez.connection, path, member, [.variantDictionary(options)]))
        switch reply {
        case .success(let message):
            let arguments = try message.arguments()
            guard case .unixFD(let fd) = arguments[0], case .uint16(let mtu) = arguments[1] else {
                return .failure(DBusError.failed("reply \(arguments)"))
            }
            return .success((fd, mtu))
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Runs the loop until `fd` has a datagram (or the deadline), then reads it.
    func receive(_ fd: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 600)
        var count = -1
        _ = f.run {
            count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            return count >= 0
        }
        return count >= 0 ? Array(buffer[..<count]) : nil
    }

    /// Runs the loop until `fd` reads end-of-file (or the deadline), woken by `fd` itself:
    /// the hang-up can come after gattd closed its end, while a child another test forked
    /// still holds a copy of that end, when nothing else may wake the loop.
    func hangsUp(_ fd: Int32) -> Bool {
        let watch = f.loop.watch(fd: fd, events: .readable) { _ in }
        defer { watch.cancel() }
        var byte: UInt8 = 0
        return f.run { recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK)) == 0 }
    }

    func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    }

    /// The notifications' clock moves by `interval` (the unread check runs on it), and the
    /// loop then handles what that started.
    func pass(_ interval: Duration) {
        f.clock.advance(by: interval)
        f.settle(bluez.connection)
    }

    /// Whether `fd` still has a datagram gattd sent, unread (and its end still open).
    func holdsUnread(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK)) == 1
    }
}

private func socketType(_ fd: Int32) -> Int32 {
    var type: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length)
    return type
}

@Suite("AcquireNotify / AcquireWrite sockets on a private bus", .serialized, .enabled(if: PrivateBus.isAvailable))
struct AcquiredSocketTests {
    @Test("NotifyAcquired and WriteAcquired are exported only where the definition asks")
    func propertiesOnlyWhereAsked() throws {
        let s = try SocketSession()
        #expect(try s.properties(streamUUID)["NotifyAcquired"] == .bool(false))
        #expect(try s.properties(streamUUID)["WriteAcquired"] == nil)
        #expect(try s.properties(commandUUID)["WriteAcquired"] == .bool(false))
        #expect(try s.properties(commandUUID)["NotifyAcquired"] == nil)
        #expect(try s.properties(plainUUID)["NotifyAcquired"] == nil)
        #expect(try s.properties(plainUUID)["WriteAcquired"] == nil)
    }

    @Test("AcquireNotify answers a SOCK_SEQPACKET end and the MTU; a value goes out as one datagram; hang-up unsubscribes")
    func notifyThroughTheSocket() throws {
        let s = try SocketSession()
        let stream = try #require(s.f.attribute("stream"))
        let (fd, mtu) = try s.acquire(streamUUID, "AcquireNotify", mtu: 247).get()
        #expect(mtu == 247)
        #expect(socketType(fd) == Int32(SOCK_SEQPACKET.rawValue))
        #expect(stream.isNotifying)
        #expect(s.f.service.mtu.mtu(for: device) == 247)

        var stored = false
        s.f.service.set(stream, to: [1, 2, 3]) { stored = (try? $0.get()) != nil }
        #expect(stored)
        s.f.clock.advance(by: .milliseconds(50))
        #expect(s.receive(fd) == [1, 2, 3])

        close(fd)
        #expect(s.f.run { !stream.isNotifying })
    }

    @Test("each socket of a characteristic gets every notification (one per central from BlueZ 5.69)")
    func perDeviceSockets() throws {
        let s = try SocketSession()
        let stream = try #require(s.f.attribute("stream"))
        let (first, _) = try s.acquire(streamUUID, "AcquireNotify").get()
        let (second, _) = try s.acquire(streamUUID, "AcquireNotify").get()
        defer { close(second) }
        s.f.service.set(stream, to: [7]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        #expect(s.receive(first) == [7])
        #expect(s.receive(second) == [7])
        close(first)
        s.f.settle(s.bluez.connection)
        #expect(stream.isNotifying, "one central is still subscribed")
    }

    @Test("a second shared socket gets values only once bluetoothd has read the one it lost")
    func sharedSwitchKeepsOrder() throws {
        let s = try SocketSession()
        let stream = try #require(s.f.attribute("stream"))
        let (lost, _) = try s.acquire(streamUUID, "AcquireNotify", naming: false).get()
        defer { close(lost) }
        s.f.service.set(stream, to: [1]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        let (held, _) = try s.acquire(streamUUID, "AcquireNotify", naming: false).get()
        defer { close(held) }
        s.f.service.set(stream, to: [2]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        var byte: UInt8 = 0
        #expect(recv(held, &byte, 1, Int32(MSG_DONTWAIT)) == -1, "value 2 waits while value 1 is unread")
        #expect(s.receive(lost) == [1])
        #expect(s.receive(held) == [2])
        #expect(s.hangsUp(lost), "the lost socket is closed once read")
        #expect(stream.isNotifying)
    }

    @Test("a lost shared socket bluetoothd never reads is closed after the limit; values go on")
    func sharedSwitchLimit() throws {
        let s = try SocketSession()
        let stream = try #require(s.f.attribute("stream"))
        let (lost, _) = try s.acquire(streamUUID, "AcquireNotify", naming: false).get()
        defer { close(lost) }
        s.f.service.set(stream, to: [1]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        let (held, _) = try s.acquire(streamUUID, "AcquireNotify", naming: false).get()
        defer { close(held) }
        s.f.service.set(stream, to: [2]) { _ in }
        // The limit (200 ms) is on the notifications' clock, which moves only here: the
        // test's D-Bus round trips and loop turns take no time on it, however slow.
        s.f.clock.advance(by: .milliseconds(50))
        s.f.settle(s.bluez.connection)
        var byte: UInt8 = 0
        #expect(recv(held, &byte, 1, Int32(MSG_DONTWAIT)) == -1, "value 2 waits within the limit")
        s.f.clock.advance(by: .milliseconds(149))
        #expect(recv(held, &byte, 1, Int32(MSG_DONTWAIT)) == -1, "value 2 waits until the limit")
        s.f.clock.advance(by: .milliseconds(1))
        #expect(recv(held, &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == 2, "value 2 goes out at the limit")
        #expect(recv(lost, &byte, 1, Int32(MSG_DONTWAIT)) == 1, "what it held stays readable")
        #expect(s.hangsUp(lost))
    }

    @Test("a central's socket bluetoothd stops reading is closed after a quiet interval; one it reads stays")
    func unreadSocketClosed() throws {
        let s = try SocketSession()
        let stream = try #require(s.f.attribute("stream"))
        let (abandoned, _) = try s.acquire(streamUUID, "AcquireNotify").get()
        defer { close(abandoned) }
        let (read, _) = try s.acquire(streamUUID, "AcquireNotify").get()
        defer { close(read) }
        s.f.service.set(stream, to: [1]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        #expect(s.receive(read) == [1])
        // The interval (5 s) is on the notifications' clock, which moves only here.
        s.pass(.seconds(5))
        #expect(s.holdsUnread(abandoned), "values were sent since: not judged yet")
        s.pass(.seconds(4))
        #expect(s.holdsUnread(abandoned), "before the quiet interval ends: kept")
        s.pass(.seconds(1))
        #expect(s.receive(abandoned) == [1], "what it held stays readable")
        #expect(s.hangsUp(abandoned), "unread through a quiet interval: closed")
        #expect(stream.isNotifying, "the central that reads is still subscribed")
        s.f.service.set(stream, to: [2]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        #expect(s.receive(read) == [2])
        s.f.clock.advance(by: .seconds(4))
        s.f.service.set(stream, to: [3]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        #expect(s.receive(read) == [3], "a socket bluetoothd reads is never closed")
    }

    @Test("the unread check follows the model: a shared socket is not judged, the same socket is once each central has its own")
    func unreadCheckFollowsTheModel() throws {
        let s = try SocketSession()
        let stream = try #require(s.f.attribute("stream"))
        s.f.application.notifySocketModel = .shared
        let (fd, _) = try s.acquire(streamUUID, "AcquireNotify").get()
        defer { close(fd) }
        s.f.service.set(stream, to: [1]) { _ in }
        for _ in 0..<3 {
            s.pass(.seconds(5))
        }
        #expect(s.holdsUnread(fd), "a shared socket left unread: not judged")
        #expect(stream.isNotifying)
        // The model changes under the open socket (bluetoothd's adapter seen again).
        s.f.application.notifySocketModel = .perCentral
        s.f.service.set(stream, to: [2]) { _ in }
        s.f.clock.advance(by: .milliseconds(50))
        s.pass(.seconds(5))
        #expect(s.holdsUnread(fd), "values were sent since: not judged yet")
        s.pass(.seconds(5))
        #expect(s.receive(fd) == [1], "what it held stays readable")
        #expect(s.receive(fd) == [2])
        #expect(s.hangsUp(fd), "a central's own socket unread through a quiet interval: closed")
        #expect(s.f.run { !stream.isNotifying })
    }

    @Test("AcquireWrite: datagrams are writes through the pipeline; one too long is dropped")
    func writesThroughTheSocket() throws {
        let s = try SocketSession()
        let command = try #require(s.f.attribute("command"))
        let (fd, _) = try s.acquire(commandUUID, "AcquireWrite").get()
        defer { close(fd) }
        s.send(fd, [0x0A])
        #expect(s.f.run { command.value == [0x0A] })
        s.send(fd, [1, 2, 3, 4, 5])  // maxLength 4
        s.send(fd, [0x0B, 0x0C])
        #expect(s.f.run { command.value == [0x0B, 0x0C] })
    }

    @Test("only the org.bluez owner may acquire; a characteristic that did not opt in has no such method")
    func strangersRefused() throws {
        let s = try SocketSession()
        let stranger = try s.f.stranger()
        for (uuid, member) in [(streamUUID, "AcquireNotify"), (commandUUID, "AcquireWrite")] {
            guard case .failure(let error) = try s.acquire(uuid, member, from: stranger) else {
                Issue.record("\(member) from a stranger succeeded")
                continue
            }
            #expect(error.name == "org.bluez.Error.NotAuthorized")
        }
        #expect(s.f.attribute("stream")?.isNotifying == false)
        guard case .failure(let error) = try s.acquire(plainUUID, "AcquireNotify") else {
            Issue.record("AcquireNotify on a characteristic without acquireNotify succeeded")
            return
        }
        #expect(error.name == "org.freedesktop.DBus.Error.UnknownMethod")
    }
}
