// SPDX-License-Identifier: MIT
import BlueZ
import DBusKit
import TestSupport
import Testing

private let hci0: ObjectPath = "/org/bluez/hci0"
private let hci1: ObjectPath = "/org/bluez/hci1"

/// A session on the fixture's connection whose events are recorded, with no other observer.
private final class Recorded {
    let f: BlueZFixture
    let session: BlueZSession
    var events: [BlueZSession.Event] = []

    init(preferredAdapter: String? = nil) throws {
        f = try BlueZFixture()
        session = BlueZSession(
            connection: f.connection, preferredAdapter: preferredAdapter, loop: f.loop, logger: quietLogger,
            clock: f.clock.clock)
        session.observe { [unowned self] in self.events.append($0) }
    }

    /// Starts the session and waits for its first answer about `org.bluez`.
    func start() {
        session.start()
        f.run { !self.events.isEmpty }
    }

    /// The events from `index` on.
    func events(from index: Int) -> [BlueZSession.Event] { Array(events.dropFirst(index)) }
}

@Suite("BlueZSession against a stand-in bluetoothd", .serialized, .enabled(if: PrivateBus.isAvailable))
struct BlueZSessionTests {
    @Test("no bluetoothd: absent; it appears: its owner, then the adapter; it leaves: vanished with the adapter")
    func ownerAppearsAndVanishes() throws {
        let r = try Recorded()
        r.start()
        #expect(r.events == [.absent])
        #expect(r.session.owner == nil)
        let bluez = try r.f.startBlueZ()
        let adapter = BlueZSession.Adapter(path: hci0, owner: bluez.uniqueName)
        #expect(r.f.run { r.events.count == 3 })
        #expect(r.events == [.absent, .appeared(owner: bluez.uniqueName), .adapterAvailable(adapter)])
        #expect(r.session.owner == bluez.uniqueName)
        #expect(r.session.adapter == adapter)
        #expect(adapter.name == "hci0")
        bluez.releaseName()
        #expect(r.f.run { r.events.count == 4 })
        #expect(r.events.last == .vanished(adapter: adapter))
        #expect(r.session.owner == nil)
        #expect(r.session.adapter == nil)
    }

    @Test("a new bluetoothd after the old one left: a new owner and the adapter on it; the old one is not heard")
    func ownerChanges() throws {
        let r = try Recorded()
        let first = try r.f.startBlueZ()
        r.start()
        #expect(r.f.run { r.session.adapter != nil })
        first.releaseName()
        let second = try r.f.startBlueZ()
        #expect(r.f.run { r.session.adapter?.owner == second.uniqueName })
        #expect(
            r.events == [
                .appeared(owner: first.uniqueName), .adapterAvailable(.init(path: hci0, owner: first.uniqueName)),
                .vanished(adapter: .init(path: hci0, owner: first.uniqueName)), .appeared(owner: second.uniqueName),
                .adapterAvailable(.init(path: hci0, owner: second.uniqueName)),
            ])
        // The first process, no longer org.bluez, announcing an adapter or a power change: nothing.
        let count = r.events.count
        try first.setPowered(false)
        r.f.settle(first.connection)
        r.f.settle(second.connection)
        #expect(r.events.count == count)
    }

    @Test("no adapter: noAdapter, then the one that appears; its properties and power; removed: adapterGone")
    func adapterLifecycle() throws {
        let r = try Recorded()
        let bluez = try r.f.startBlueZ(adapters: [])
        r.start()
        #expect(r.f.run { r.events.count == 2 })
        #expect(r.events == [.appeared(owner: bluez.uniqueName), .noAdapter(preferred: nil)])
        try bluez.addAdapter("hci0")
        let adapter = BlueZSession.Adapter(path: hci0, owner: bluez.uniqueName)
        #expect(r.f.run { r.session.adapter == adapter })
        #expect(r.events.last == .adapterAvailable(adapter))
        let chosen = r.events.count
        // Once the session has the adapter, its watches are in place after one round trip.
        r.f.settle(bluez.connection)
        try bluez.setPowered(false)
        try bluez.setPowered(true)
        #expect(r.f.run { r.events.count == chosen + 4 })
        #expect(
            r.events(from: chosen) == [
                .adapterProperties(changed: ["Powered": .bool(false)]), .powered(false),
                .adapterProperties(changed: ["Powered": .bool(true)]), .powered(true),
            ])
        bluez.removeAdapter("hci0")
        #expect(r.f.run { r.events.count == chosen + 5 })
        #expect(r.events.last == .adapterGone(adapter))
        #expect(r.session.adapter == nil)
        #expect(r.session.owner == bluez.uniqueName)
        // The removed adapter's power is nobody's business any more.
        try bluez.addAdapter("hci1", gatt: false)
        try bluez.setPowered(false, adapter: "hci1")
        r.f.settle(bluez.connection)
        #expect(r.events.count == chosen + 5)
    }

    @Test("a configured adapter: others are not chosen, neither listed nor appearing")
    func preferredAdapter() throws {
        let r = try Recorded(preferredAdapter: "hci1")
        let bluez = try r.f.startBlueZ(adapters: ["hci0"])
        r.start()
        #expect(r.f.run { r.events.count == 2 })
        #expect(r.events.last == .noAdapter(preferred: "hci1"))
        try bluez.addAdapter("hci2")
        try bluez.addAdapter("hci1")
        #expect(r.f.run { r.session.adapter != nil })
        #expect(r.session.adapter == .init(path: hci1, owner: bluez.uniqueName))
        #expect(r.events.count == 3)
    }

    @Test("every change starts a generation: an answer to a call from before it is recognised as stale")
    func staleAnswersAfterAChange() throws {
        let r = try Recorded()
        let bluez = try r.f.startBlueZ()
        r.start()
        #expect(r.f.run { r.session.adapter != nil })
        let attempt = r.session.generation
        #expect(r.session.isCurrent(attempt))
        // A call about the adapter; before bluetoothd answers it, the adapter goes.
        var answerWasCurrent: Bool?
        r.f.connection.call(
            destination: "org.bluez", path: hci0, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
            arguments: [.string("org.bluez.Adapter1")]
        ) { _ in answerWasCurrent = r.session.isCurrent(attempt) }
        bluez.removeAdapter("hci0")
        #expect(r.f.run { answerWasCurrent != nil })
        #expect(r.events.last == .adapterGone(.init(path: hci0, owner: bluez.uniqueName)))
        #expect(answerWasCurrent == false)
        #expect(!r.session.isCurrent(attempt))
        // The adapter back and bluetoothd gone: each a new generation.
        try bluez.addAdapter("hci0")
        #expect(r.f.run { r.session.adapter != nil })
        let back = r.session.generation
        #expect(back != attempt)
        bluez.releaseName()
        #expect(r.f.run { r.session.owner == nil })
        #expect(!r.session.isCurrent(back))
    }

    @Test("a listing that fails is retried on the clock; a retry from before bluetoothd left does nothing")
    func listingRetryIsDroppedWhenStale() throws {
        let r = try Recorded()
        let first = try FakeBlueZ(address: r.f.bus.address, loop: r.f.loop)
        try first.addAdapter("hci0")
        first.connection.removeObjectManager(at: "/")
        #expect(first.claimName())
        r.start()
        #expect(r.f.run { r.f.clock.pendingCount == 1 })
        #expect(r.f.clock.nextDelay == .seconds(1))
        first.releaseName()
        #expect(r.f.run { r.events.last == .vanished(adapter: nil) })
        #expect(r.f.clock.pendingCount == 0, "the retry is cancelled with the owner")
        let second = try r.f.startBlueZ()
        #expect(r.f.run { r.session.adapter?.owner == second.uniqueName })
        r.f.clock.advance(by: .seconds(60))
        r.f.settle(second.connection)
        #expect(
            r.events == [
                .appeared(owner: first.uniqueName), .vanished(adapter: nil), .appeared(owner: second.uniqueName),
                .adapterAvailable(.init(path: hci0, owner: second.uniqueName)),
            ])
    }

    @Test("observers hear each event in the order they were added, one event after the other")
    func observersInOrder() throws {
        let r = try Recorded()
        var heard: [String] = []
        for name in ["first", "second", "third"] {
            r.session.observe { event in
                switch event {
                case .appeared: heard.append("\(name) appeared")
                case .adapterAvailable: heard.append("\(name) adapter")
                case .vanished: heard.append("\(name) vanished")
                default: heard.append("\(name) other")
                }
            }
        }
        let bluez = try r.f.startBlueZ()
        r.start()
        #expect(r.f.run { r.session.adapter != nil })
        bluez.releaseName()
        #expect(r.f.run { r.session.owner == nil })
        #expect(
            heard == [
                "first appeared", "second appeared", "third appeared", "first adapter", "second adapter",
                "third adapter", "first vanished", "second vanished", "third vanished",
            ])
    }

    @Test("devices under the adapter: added, changed and removed reach the observers; other adapters' do not")
    func deviceSignals() throws {
        let r = try Recorded()
        let bluez = try r.f.startBlueZ(adapters: ["hci0", "hci1"])
        r.start()
        #expect(r.f.run { r.session.adapter?.path == hci0 })
        r.f.settle(bluez.connection)
        let chosen = r.events.count
        try bluez.addDevice("AA:BB:CC:DD:EE:09", adapter: "hci1")
        let device = try bluez.addDevice("AA:BB:CC:DD:EE:01")
        try bluez.setConnected(device, false)
        bluez.connection.unexport(device.path)
        #expect(r.f.run { r.events.count == chosen + 3 })
        let seen = r.events(from: chosen)
        guard case .interfacesAdded(let added, let interfaces) = seen[0] else {
            Issue.record("expected interfacesAdded first, got \(seen)")
            return
        }
        #expect(added == device.path)
        #expect(interfaces["org.bluez.Device1"]?["Address"] == .string("AA:BB:CC:DD:EE:01"))
        #expect(seen[1] == .deviceChanged(path: device.path, changed: ["Connected": .bool(false)]))
        guard case .interfacesRemoved(let removed, let names) = seen[2] else {
            Issue.record("expected interfacesRemoved last, got \(seen)")
            return
        }
        #expect(removed == device.path)
        #expect(names.contains("org.bluez.Device1"))
    }
}
