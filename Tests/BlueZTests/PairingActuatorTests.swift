// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import DBusKit
import Foundation
import TestSupport
import Testing

private let agentPath: ObjectPath = "/org/gattd/agent"

/// A configuration with one characteristic and `security`.
private func configuration(security: String) -> String {
    """
    {"version": 1, "services": [{"id": "s", "uuid": "180F", "characteristics": [
      {"id": "level", "uuid": "2A19", "flags": ["read"], "value": [{"uint8": 1}]}]}],
     "security": \(security)}
    """
}

/// `Pairing` wired as the daemon wires it (the session's events through the peripheral's
/// `follow`, the central watch's connections, `onEvent`), against a stand-in bluetoothd
/// with an agent manager and the centrals each test adds before the start.
private final class PairingRig {
    let log = RecordedLog()
    let f: BlueZFixture
    let bluez: FakeBlueZ
    var pairing: Pairing { f.pairing }
    var events: [Pairing.Event] = []

    init(security: String, centrals: (FakeBlueZ) throws -> Void = { _ in }) throws {
        f = try BlueZFixture(configurationText: configuration(security: security), logger: log.logger)
        bluez = try f.startBlueZ()
        try bluez.addAgentManager()
        try centrals(bluez)
        let watch = f.peripheral.centrals
        watch.onEvent = { [unowned self, unowned watch] event in
            if case .connected(let device, let address, _, _) = event {
                self.pairing.centralConnected(device: device, address: address, centrals: watch)
            }
        }
        pairing.onEvent = { [unowned self] in self.events.append($0) }
        pairing.start(centrals: watch)
        f.start()
    }

    /// Waits until the agent is bluetoothd's default agent (the pairing followed the adapter).
    func agentRegistered() -> Bool {
        f.run { self.bluez.calls.contains { $0.member == "RequestDefaultAgent" } }
    }

    /// Calls `member` of gattd's agent as bluetoothd; `answer` is set when gattd replies.
    func callAgent(_ member: String, _ arguments: [DBusValue], answer: @escaping (Result<Message, DBusError>) -> Void) {
        bluez.connection.call(
            destination: f.connection.uniqueName, path: agentPath, interface: "org.bluez.Agent1", member: member,
            arguments: arguments, reply: answer)
    }
}

/// A new scratch directory for the programs and their output; the test removes it.
private func scratchDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "gattd-pairing-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("Pairing carries out the security settings with a stand-in bluetoothd", .serialized, .enabled(if: PrivateBus.isAvailable))
struct PairingActuatorTests {
    @Test("bondedOnly: a central found connected without a bond is disconnected, a bonded one stays")
    func bondedOnlyAtStart() throws {
        var stranger: FakeDevice?
        var friend: FakeDevice?
        let r = try PairingRig(security: #"{"pairing": "just-works", "pairable": "never", "bondedOnly": true}"#) {
            stranger = try $0.addDevice("AA:BB:CC:DD:EE:01", connected: true, paired: false)
            friend = try $0.addDevice("AA:BB:CC:DD:EE:02", connected: true, paired: true)
        }
        #expect(r.f.run { stranger?.disconnects == 1 })
        r.f.settle(r.bluez.connection)
        #expect(friend?.disconnects == 0)
        #expect(r.log.has(.notice, "disconnecting a central that is not bonded", containing: ["AA:BB:CC:DD:EE:01"]))
    }

    @Test("bondedOnly: while the window is open a new central stays to pair; once it closed, one is disconnected")
    func bondedOnlyAndTheWindow() throws {
        var early: FakeDevice?
        let r = try PairingRig(
            security: #"{"pairing": "just-works", "pairable": "window", "pairableSeconds": 30, "bondedOnly": true}"#
        ) {
            early = try $0.addDevice("AA:BB:CC:DD:EE:03", connected: true, paired: false)
        }
        #expect(r.agentRegistered())
        #expect(r.log.has(.info, "a central without a bond connected while pairing is open", containing: ["EE:03"]))
        r.f.clock.advance(by: .seconds(30))
        #expect(r.f.peripheral.window?.isOpen == false)
        let late = try r.bluez.addDevice("AA:BB:CC:DD:EE:04", connected: true, paired: false)
        #expect(r.f.run { late.disconnects == 1 })
        r.f.settle(r.bluez.connection)
        #expect(early?.disconnects == 0, "admitted while pairing was open")
        #expect(r.events == [.window(open: true, secondsLeft: 30), .window(open: false, secondsLeft: nil)])
    }

    // The programs run as `/bin/sh SCRIPT`, not by exec'ing the fresh file: a child forked
    // meanwhile by a test running in parallel can still hold the file's write descriptor,
    // and execve of a file open for writing fails with ETXTBSY (a spurious "cannot start").
    @Test("display passkey: the onPasskey program gets the passkey, then Event.passkey")
    func passkeyReachesProgramAndEvent() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = directory + "/show"
        try Data("#!/bin/sh\necho \"$GATTD_PASSKEY $GATTD_DEVICE\" > \"$0.out\"\n".utf8).write(
            to: URL(fileURLWithPath: script))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        var device: FakeDevice?
        let r = try PairingRig(
            security: #"{"pairing": "display-passkey", "pairable": "always", "onPasskey": {"argv": ["/bin/sh", "\#(script)"]}}"#
        ) {
            device = try $0.addDevice("AA:BB:CC:DD:EE:05", connected: true)
        }
        #expect(r.agentRegistered())
        let path = try #require(device?.path)
        var answer: Result<Message, DBusError>?
        r.callAgent("DisplayPasskey", [.objectPath(path), .uint32(4_321), .uint16(0)]) { answer = $0 }
        #expect(r.f.run { answer != nil })
        #expect(try errorName(#require(answer)) == nil)
        #expect(r.events == [.passkey(device: path.rawValue, address: "AA:BB:CC:DD:EE:05", passkey: "004321")])
        #expect(r.log.has(.notice, "passkey for pairing: 004321", containing: ["device=AA:BB:CC:DD:EE:05"]))
        let output = script + ".out"
        #expect(r.f.run { FileManager.default.contents(atPath: output)?.last == UInt8(ascii: "\n") })
        #expect(FileManager.default.contents(atPath: output) == Data("004321 AA:BB:CC:DD:EE:05\n".utf8))
    }

    @Test("display passkey: an onPasskey program that cannot start shows the passkey nowhere and drops the central")
    func passkeyProgramFailsClosed() throws {
        var device: FakeDevice?
        let missing = "/nonexistent/gattd-test/show-passkey"
        let r = try PairingRig(
            security: #"{"pairing": "display-passkey", "pairable": "always", "onPasskey": {"argv": ["\#(missing)"]}}"#
        ) {
            device = try $0.addDevice("AA:BB:CC:DD:EE:06", connected: true)
        }
        #expect(r.agentRegistered())
        let path = try #require(device?.path)
        r.callAgent("DisplayPasskey", [.objectPath(path), .uint32(123_456), .uint16(0)]) { _ in }
        #expect(r.f.run { device?.disconnects == 1 })
        #expect(r.events.isEmpty, "the passkey reaches nobody")
        #expect(r.log.has(.error, "pairing refused: the passkey program cannot start", containing: [missing]))
        #expect(!r.log.lines.contains { $0.contains("123456") })
    }

    @Test("numeric comparison: Event.confirmation, a second request for the central is rejected, a decision answers")
    func confirmationDecided() throws {
        var device: FakeDevice?
        let r = try PairingRig(security: #"{"pairing": "numeric-comparison", "pairable": "always"}"#) {
            device = try $0.addDevice("AA:BB:CC:DD:EE:07", connected: true)
        }
        #expect(r.agentRegistered())
        let path = try #require(device?.path)
        var first: Result<Message, DBusError>?
        r.callAgent("RequestConfirmation", [.objectPath(path), .uint32(7)]) { first = $0 }
        #expect(r.f.run { r.pairing.confirmations?.pending.count == 1 })
        #expect(r.events == [.confirmation(device: path.rawValue, address: "AA:BB:CC:DD:EE:07", passkey: "000007")])
        var second: Result<Message, DBusError>?
        r.callAgent("RequestConfirmation", [.objectPath(path), .uint32(8)]) { second = $0 }
        #expect(r.f.run { second != nil })
        #expect(try errorName(#require(second)) == "org.bluez.Error.Rejected")
        #expect(first == nil, "the first still waits")
        let confirmations = try #require(r.pairing.confirmations)
        let decided = confirmations.decide(address: nil, .accept(by: "the test"))
        #expect((try? decided.get())?.address == "AA:BB:CC:DD:EE:07")
        #expect(r.f.run { first != nil })
        #expect(try errorName(#require(first)) == nil)
        #expect(r.events.count == 1)
    }

    @Test("numeric comparison: the onConfirm program's exit status decides; one that cannot start rejects")
    func confirmationByProgram() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let accept = directory + "/accept"
        try Data("#!/bin/sh\n[ \"$GATTD_PASSKEY\" = 000042 ]\n".utf8).write(to: URL(fileURLWithPath: accept))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: accept)
        var device: FakeDevice?
        let r = try PairingRig(
            security: #"{"pairing": "numeric-comparison", "pairable": "always", "onConfirm": {"argv": ["/bin/sh", "\#(accept)"]}}"#
        ) {
            device = try $0.addDevice("AA:BB:CC:DD:EE:08", connected: true)
        }
        #expect(r.agentRegistered())
        let path = try #require(device?.path)
        var accepted: Result<Message, DBusError>?
        r.callAgent("RequestConfirmation", [.objectPath(path), .uint32(42)]) { accepted = $0 }
        #expect(r.f.run { accepted != nil })
        #expect(try errorName(#require(accepted)) == nil)
        var rejected: Result<Message, DBusError>?
        r.callAgent("RequestConfirmation", [.objectPath(path), .uint32(43)]) { rejected = $0 }
        #expect(r.f.run { rejected != nil })
        #expect(try errorName(#require(rejected)) == "org.bluez.Error.Rejected")

        let missing = "/nonexistent/gattd-test/confirm"
        var other: FakeDevice?
        let s = try PairingRig(
            security: #"{"pairing": "numeric-comparison", "pairable": "always", "onConfirm": {"argv": ["\#(missing)"]}}"#
        ) {
            other = try $0.addDevice("AA:BB:CC:DD:EE:09", connected: true)
        }
        #expect(s.agentRegistered())
        var answer: Result<Message, DBusError>?
        s.callAgent("RequestConfirmation", [.objectPath(try #require(other?.path)), .uint32(1)]) { answer = $0 }
        #expect(s.f.run { answer != nil })
        #expect(try errorName(#require(answer)) == "org.bluez.Error.Rejected")
        #expect(s.events.isEmpty, "the digits are shown nowhere")
        #expect(s.log.has(.error, "the onConfirm program cannot start", containing: [missing]))
    }

    @Test("stop rejects the confirmation waiting, puts the adapter's settings back and unregisters the agent")
    func stopEndsEverything() throws {
        var device: FakeDevice?
        let r = try PairingRig(security: #"{"pairing": "numeric-comparison", "pairable": "always"}"#) {
            device = try $0.addDevice("AA:BB:CC:DD:EE:0A", connected: true)
        }
        #expect(r.agentRegistered())
        let adapter = try #require(r.bluez.adapters["hci0"])
        #expect(r.f.run { adapter.pairingWrites == ["PairableTimeout=0", "Pairable=true"] })
        var waiting: Result<Message, DBusError>?
        r.callAgent("RequestConfirmation", [.objectPath(try #require(device?.path)), .uint32(5)]) { waiting = $0 }
        #expect(r.f.run { r.pairing.confirmations?.pending.count == 1 })
        var stopped = false
        r.pairing.stop { stopped = true }
        #expect(r.f.run { stopped && waiting != nil })
        #expect(try errorName(#require(waiting)) == "org.bluez.Error.Rejected")
        #expect(r.bluez.calls.last?.member == "UnregisterAgent")
        #expect(adapter.pairingWrites.last == "Pairable=false", "put back as first found")
        #expect(!adapter.pairable)
    }

    @Test("bluetoothd going away rejects the confirmations waiting and the agent forgets it")
    func bluetoothdGone() throws {
        var device: FakeDevice?
        let r = try PairingRig(security: #"{"pairing": "numeric-comparison", "pairable": "always"}"#) {
            device = try $0.addDevice("AA:BB:CC:DD:EE:0B", connected: true)
        }
        #expect(r.agentRegistered())
        r.callAgent("RequestConfirmation", [.objectPath(try #require(device?.path)), .uint32(5)]) { _ in }
        #expect(r.f.run { r.pairing.confirmations?.pending.count == 1 })
        r.bluez.releaseName()
        #expect(r.f.run { r.pairing.confirmations?.pending.isEmpty == true })
        #expect(r.pairing.agent?.registeredWith == nil)
    }
}
