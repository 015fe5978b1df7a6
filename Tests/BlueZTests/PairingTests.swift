// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import DBusKit
import TestSupport
import Testing

private let hci0: ObjectPath = "/org/bluez/hci0"
private let agentPath: ObjectPath = "/org/gattd/agent"
private let device = "/org/bluez/hci0/dev_00_11_22_33_44_66"
/// The `Address` bluetoothd gives that object: a phone that bonded over the private address
/// the path names (the agent must ask, never read the path).
private let identity = "00:AA:01:01:00:09"

extension BlueZFixture {
    func pairingWindow(_ policy: SecurityDefinition.Pairable) -> PairingWindow {
        PairingWindow(
            policy: policy, connection: connection, session: session, loop: loop, logger: quietLogger,
            clock: clock.clock)
    }

    /// Calls `member` of gattd's agent from `caller` and waits for the answer.
    func callAgent(_ caller: BusConnection, _ member: String, _ arguments: [DBusValue]) throws -> Result<
        Message, DBusError
    > {
        try #require(call(self, caller, agentPath, member, arguments, interface: "org.bluez.Agent1"))
    }
}

@Suite("PairingWindow on the adapter, on a manual clock", .serialized, .enabled(if: PrivateBus.isAvailable))
struct PairingWindowTests {
    @Test("window: open from the start with PairableTimeout set to the seconds left; closes on the clock")
    func windowOpensAndCloses() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        let window = f.pairingWindow(.window(seconds: 60))
        var changes: [String] = []
        window.onChange = { open, left in changes.append("\(open) \(left.map(String.init) ?? "-")") }
        window.start()
        #expect(window.isOpen)
        #expect(window.secondsLeft == 60)
        var found = false
        window.adapterAvailable(path: hci0) { found = true }
        #expect(f.run { found && adapter.pairingWrites.count == 2 })
        // The timeout first: Pairable true starts bluetoothd's timer with the timeout it has.
        #expect(adapter.pairingWrites == ["PairableTimeout=60", "Pairable=true"])
        f.clock.advance(by: .seconds(59))
        #expect(window.isOpen)
        #expect(window.secondsLeft == 1)
        f.clock.advance(by: .seconds(1))
        #expect(!window.isOpen)
        #expect(window.secondsLeft == nil)
        #expect(f.run { adapter.pairingWrites.count == 3 })
        #expect(adapter.pairingWrites.last == "Pairable=false")
        #expect(changes == ["true 60", "false -"])
        #expect(f.clock.pendingCount == 0)
    }

    @Test("opening again restarts the window: the earlier closing time no longer applies")
    func reopenRestartsTimer() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        let window = f.pairingWindow(.window(seconds: 30))
        window.start()
        window.adapterAvailable(path: hci0)
        #expect(f.run { adapter.pairingWrites.count == 2 })
        f.clock.advance(by: .milliseconds(10_500))
        #expect(window.secondsLeft == 20)
        #expect(window.open(seconds: 30) == nil)
        #expect(f.run { adapter.pairingWrites.count == 4 })
        #expect(adapter.pairingWrites.suffix(2) == ["PairableTimeout=30", "Pairable=true"])
        f.clock.advance(by: .seconds(25))
        #expect(window.isOpen)
        #expect(f.clock.pendingCount == 1)
        f.clock.advance(by: .seconds(5))
        #expect(!window.isOpen)
        #expect(f.run { adapter.pairingWrites.last == "Pairable=false" })
    }

    @Test("always and never: Pairable as the policy says, and open(seconds:) is refused with the reason")
    func alwaysAndNever() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        let always = f.pairingWindow(.always)
        always.start()
        always.adapterAvailable(path: hci0)
        #expect(f.run { adapter.pairingWrites == ["PairableTimeout=0", "Pairable=true"] })
        #expect(always.isOpen)
        #expect(always.open(seconds: 10)?.contains("always") == true)
        #expect(f.clock.pendingCount == 0)

        let never = f.pairingWindow(.never)
        never.start()
        never.adapterAvailable(path: hci0)
        #expect(f.run { adapter.pairingWrites.count == 3 })
        #expect(adapter.pairingWrites.last == "Pairable=false")
        #expect(!never.isOpen)
        #expect(never.open(seconds: 10)?.contains("never") == true)
    }

    @Test("stop puts back the adapter's settings as first found, timeout first")
    func stopRestores() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        adapter.pairable = true
        adapter.pairableTimeout = 120
        let window = f.pairingWindow(.never)
        window.start()
        window.adapterAvailable(path: hci0)
        #expect(f.run { adapter.pairingWrites == ["Pairable=false"] })
        var stopped = false
        window.stop { stopped = true }
        #expect(f.run { stopped })
        #expect(adapter.pairingWrites == ["Pairable=false", "PairableTimeout=120", "Pairable=true"])
    }

    @Test("Pairable unreadable: the window still goes on the adapter (closed: false), again once the agent registered")
    func unreadableFailsClosed() throws {
        let f = try BlueZFixture()
        let window = f.pairingWindow(.never)
        var found = false
        // No bluetoothd yet: GetAll fails, so what the adapter had is unknown.
        window.adapterAvailable(path: hci0) { found = true }
        #expect(f.run { found })
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        adapter.pairable = true  // as bluetoothd leaves it once a default agent appeared
        window.agentRegistered()
        #expect(f.run { adapter.pairingWrites == ["Pairable=false"] })
        #expect(!adapter.pairable)
        var stopped = false
        window.stop { stopped = true }
        #expect(f.run { stopped })
        #expect(adapter.pairingWrites == ["Pairable=false"], "nothing read, nothing put back")
    }

    @Test("after bluetoothd restarts, what gattd first found is what stop puts back")
    func firstFoundSurvivesRestart() throws {
        let f = try BlueZFixture()
        let first = try f.startBlueZ()
        let window = f.pairingWindow(.window(seconds: 60))
        window.start()
        window.adapterAvailable(path: hci0)
        #expect(f.run { first.adapters["hci0"]?.pairingWrites.count == 2 })
        window.adapterGone()
        first.releaseName()
        // The new bluetoothd shows what gattd set (bluetoothd stores PairableTimeout).
        let second = try f.startBlueZ()
        let adapter = try #require(second.adapters["hci0"])
        adapter.pairable = true
        adapter.pairableTimeout = 60
        window.adapterAvailable(path: hci0)
        #expect(f.run { adapter.pairingWrites == ["PairableTimeout=60", "Pairable=true"] })
        var stopped = false
        window.stop { stopped = true }
        #expect(f.run { stopped })
        #expect(adapter.pairingWrites.suffix(2) == ["PairableTimeout=0", "Pairable=false"])
    }
}

@Suite("PairingAgent with a stand-in bluetoothd", .serialized, .enabled(if: PrivateBus.isAvailable))
struct PairingAgentTests {
    private func startAgent(_ f: BlueZFixture, _ mode: SecurityDefinition.Pairing) throws -> (PairingAgent, FakeBlueZ) {
        let bluez = try f.startBlueZ()
        try bluez.addAgentManager()
        try bluez.addDevice(identity, pathAddress: "00:11:22:33:44:66")
        let agent = PairingAgent(mode: mode, connection: f.connection, session: f.session, logger: quietLogger)
        try agent.start()
        agent.bluezAvailable(owner: bluez.uniqueName)
        guard f.run(until: { agent.registeredWith == bluez.uniqueName }) else {
            throw BlueZFixture.FixtureError(description: "agent not registered")
        }
        return (agent, bluez)
    }

    @Test("registers with AgentManager1 with its capability, then asks to be the default agent")
    func registers() throws {
        let f = try BlueZFixture()
        let (agent, bluez) = try startAgent(f, .justWorks)
        #expect(bluez.calls.map(\.member) == ["RegisterAgent", "RequestDefaultAgent"])
        #expect(bluez.calls.allSatisfy { $0.object == agentPath.rawValue })
        #expect(bluez.events.contains("capability NoInputNoOutput"))
        #expect(agent.trustedSender == bluez.uniqueName)
    }

    @Test("onRegistered runs once the agent is the default, so the window can go on the adapter again")
    func registeredIsReported() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        try bluez.addAgentManager()
        let agent = PairingAgent(mode: .justWorks, connection: f.connection, session: f.session, logger: quietLogger)
        try agent.start()
        var membersAtRegistered: [String]?
        agent.onRegistered = { membersAtRegistered = bluez.calls.map(\.member) }
        agent.bluezAvailable(owner: bluez.uniqueName)
        #expect(f.run { membersAtRegistered != nil })
        #expect(membersAtRegistered == ["RegisterAgent", "RequestDefaultAgent"])
    }

    @Test("just works: RequestAuthorization accepted only while pairing is allowed, and only from bluetoothd")
    func justWorksAuthorization() throws {
        let f = try BlueZFixture()
        let (agent, bluez) = try startAgent(f, .justWorks)
        var allowed = false
        agent.pairingAllowed = { allowed }
        let closed = try f.callAgent(bluez.connection, "RequestAuthorization", [.objectPath(objectPath(device))])
        #expect(errorName(closed) == "org.bluez.Error.Rejected")
        allowed = true
        let open = try f.callAgent(bluez.connection, "RequestAuthorization", [.objectPath(objectPath(device))])
        #expect(errorName(open) == nil)
        let stranger = try f.stranger()
        let forged = try f.callAgent(stranger, "RequestAuthorization", [.objectPath(objectPath(device))])
        #expect(errorName(forged) == "org.bluez.Error.Rejected")
        let passkey = try f.callAgent(
            bluez.connection, "DisplayPasskey", [.objectPath(objectPath(device)), .uint32(123_456), .uint16(0)])
        #expect(errorName(passkey) == "org.bluez.Error.Rejected")
    }

    @Test("display passkey: the passkey is announced once per device; other methods are refused")
    func displayPasskey() throws {
        let f = try BlueZFixture()
        let (agent, bluez) = try startAgent(f, .displayPasskey)
        #expect(bluez.events.contains("capability DisplayOnly"))
        agent.pairingAllowed = { true }
        var events: [PairingAgent.Event] = []
        agent.onEvent = { events.append($0) }
        for entered in [UInt16(0), 1, 2] {
            let shown = try f.callAgent(
                bluez.connection, "DisplayPasskey", [.objectPath(objectPath(device)), .uint32(4_321), .uint16(entered)])
            #expect(errorName(shown) == nil)
        }
        #expect(events == [.passkey(device: device, address: identity, passkey: 4_321)])
        #expect(PairingAgent.format(passkey: 4_321) == "004321")
        let refused: [(String, [DBusValue])] = [
            ("RequestAuthorization", [.objectPath(objectPath(device))]),
            ("RequestConfirmation", [.objectPath(objectPath(device)), .uint32(1)]),
            ("RequestPasskey", [.objectPath(objectPath(device))]),
            ("RequestPinCode", [.objectPath(objectPath(device))]),
            ("AuthorizeService", [.objectPath(objectPath(device)), .string("0000110a-0000-1000-8000-00805f9b34fb")])
        ]
        for (member, arguments) in refused {
            #expect(errorName(try f.callAgent(bluez.connection, member, arguments)) == "org.bluez.Error.Rejected")
        }
        #expect(errorName(try f.callAgent(bluez.connection, "Cancel", [])) == nil)
        #expect(events.last == .cancelled)
    }

    @Test("a new bluetoothd: the agent registers with it and trusts only it")
    func blueZRestart() throws {
        let f = try BlueZFixture()
        let (agent, first) = try startAgent(f, .justWorks)
        agent.pairingAllowed = { true }
        first.releaseName()
        agent.bluezGone()
        #expect(agent.registeredWith == nil)
        let second = try f.startBlueZ()
        try second.addAgentManager()
        try second.addDevice(identity, pathAddress: "00:11:22:33:44:66")
        agent.bluezAvailable(owner: second.uniqueName)
        #expect(f.run { agent.registeredWith == second.uniqueName })
        #expect(second.calls.map(\.member) == ["RegisterAgent", "RequestDefaultAgent"])
        let old = try f.callAgent(first.connection, "RequestAuthorization", [.objectPath(objectPath(device))])
        #expect(errorName(old) == "org.bluez.Error.Rejected")
        let new = try f.callAgent(second.connection, "RequestAuthorization", [.objectPath(objectPath(device))])
        #expect(errorName(new) == nil)
    }

    @Test("a central is named by the Address gattd knows, else bluetoothd's; one bluetoothd cannot name is refused")
    func namedByAddress() throws {
        let f = try BlueZFixture()
        let (agent, bluez) = try startAgent(f, .displayPasskey)
        agent.pairingAllowed = { true }
        var events: [PairingAgent.Event] = []
        agent.onEvent = { events.append($0) }
        agent.centralAddress = { $0 == device ? "00:AA:01:01:00:0A" : nil }
        _ = try f.callAgent(bluez.connection, "DisplayPasskey", [.objectPath(objectPath(device)), .uint32(1), .uint16(0)])
        #expect(events == [.passkey(device: device, address: "00:AA:01:01:00:0A", passkey: 1)])
        let unknown = "/org/bluez/hci0/dev_00_11_22_33_44_77"
        let refused = try f.callAgent(
            bluez.connection, "DisplayPasskey", [.objectPath(objectPath(unknown)), .uint32(2), .uint16(0)])
        #expect(errorName(refused) == "org.bluez.Error.Rejected")
        #expect(events.count == 1, "no passkey for a central nobody can name")
    }

    @Test("stop unregisters the agent and takes its object off the bus")
    func stopUnregisters() throws {
        let f = try BlueZFixture()
        let (agent, bluez) = try startAgent(f, .justWorks)
        var stopped = false
        agent.stop { stopped = true }
        #expect(f.run { stopped })
        #expect(bluez.calls.last?.member == "UnregisterAgent")
        let gone = try f.callAgent(bluez.connection, "RequestAuthorization", [.objectPath(objectPath(device))])
        #expect(errorName(gone) == DBusError.Name.unknownObject)
    }
}
