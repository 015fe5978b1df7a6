// SPDX-License-Identifier: MIT
import BlueZ
import DBusKit
import TestSupport
import Testing

private let hci0: ObjectPath = "/org/bluez/hci0"

@Suite("CentralWatch with a stand-in bluetoothd", .serialized, .enabled(if: PrivateBus.isAvailable))
struct CentralWatchTests {
    /// A watch on hci0 that has read bluetoothd's objects, and the events it reports.
    private final class Watched {
        let f: BlueZFixture
        let bluez: FakeBlueZ
        let session: BlueZSession
        let watch: CentralWatch
        var events: [CentralWatch.Event] = []
        /// `onFoundConnected`: "device address".
        var found: [String] = []

        init(before: (FakeBlueZ) throws -> Void = { _ in }) throws {
            f = try BlueZFixture()
            bluez = try f.startBlueZ()
            try before(bluez)
            // As the daemon wires it, without the registrar and the advertiser: a session that
            // finds hci0 and tells the watch.
            session = BlueZSession(
                connection: f.connection, preferredAdapter: nil, loop: f.loop, logger: quietLogger,
                clock: f.clock.clock)
            watch = CentralWatch(connection: f.connection, session: session, logger: quietLogger)
            watch.onEvent = { [unowned self] in self.events.append($0) }
            watch.onFoundConnected = { [unowned self] in self.found.append("\($0) \($1)") }
            session.observe { [unowned watch] in watch.handle($0) }
            session.start()
            f.run { self.session.adapter?.path == hci0 }
            // The session's GetManagedObjects went after its AddMatch calls: once bluetoothd
            // has seen gattd's next message, both are in place.
            f.settle(bluez.connection)
        }
    }

    @Test(
        "a central connecting (new Device1) and disconnecting (Connected false) is reported with its address and name")
    func connectAndDisconnect() throws {
        let w = try Watched()
        let device = try w.bluez.addDevice("AA:BB:CC:DD:EE:01", name: "phone")
        #expect(w.f.run { w.events.count == 1 })
        let path = device.path.rawValue
        #expect(w.events == [.connected(device: path, address: "AA:BB:CC:DD:EE:01", addressType: "public", name: "phone")])
        #expect(w.watch.connectedDevices == [path])
        try w.bluez.setConnected(device, false)
        #expect(w.f.run { w.events.count == 2 })
        #expect(w.events.last == .disconnected(device: path, address: "AA:BB:CC:DD:EE:01", addressType: "public", name: "phone"))
        #expect(w.watch.connectedDevices.isEmpty)
        try w.bluez.setConnected(device, true)
        #expect(w.f.run { w.events.count == 3 })
        #expect(w.events.last == .connected(device: path, address: "AA:BB:CC:DD:EE:01", addressType: "public", name: "phone"))
    }

    @Test("a connected central's Device1 removed counts as a disconnection")
    func removedDevice() throws {
        let w = try Watched()
        let device = try w.bluez.addDevice("AA:BB:CC:DD:EE:02")
        #expect(w.f.run { w.events.count == 1 })
        w.bluez.connection.unexport(device.path)
        #expect(w.f.run { w.events.count == 2 })
        #expect(
            w.events.last == .disconnected(device: device.path.rawValue, address: "AA:BB:CC:DD:EE:02", addressType: "public", name: nil))
    }

    @Test("centrals connected before gattd started are known, not announced; the adapter going disconnects them")
    func knownAtStartAndAdapterGone() throws {
        let w = try Watched { bluez in
            try bluez.addDevice("AA:BB:CC:DD:EE:03", name: "bonded", paired: true)
            try bluez.addDevice("AA:BB:CC:DD:EE:04", connected: false)
        }
        #expect(w.events.isEmpty)
        #expect(w.watch.connectedDevices == ["/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03"])
        #expect(
            w.found == ["/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03 AA:BB:CC:DD:EE:03"],
            "the connected one is handed to bondedOnly, the other is not")
        #expect(w.watch.bonds.map(\.address) == ["AA:BB:CC:DD:EE:03"])
        #expect(w.watch.isBonded("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03"))
        #expect(w.watch.device(address: "aa:bb:cc:dd:ee:04") == "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_04")
        w.watch.adapterGone()
        #expect(
            w.events == [
                .disconnected(
                    device: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_03", address: "AA:BB:CC:DD:EE:03", addressType: "public",
                    name: "bonded")
            ])
        #expect(w.watch.connectedDevices.isEmpty)
    }

    @Test("a central that bonds over a private address keeps its object and is announced by its new address")
    func privateAddressBecomesIdentity() throws {
        let w = try Watched()
        let rpa = "6E:0D:A0:33:2C:6E"
        let identity = "00:AA:01:01:00:01"
        let device = try w.bluez.addDevice(rpa, name: "phone", addressType: "random")
        let path = device.path.rawValue
        #expect(w.f.run { w.events.count == 1 })
        #expect(w.events == [.connected(device: path, address: rpa, addressType: "random", name: "phone")])
        try w.bluez.setIdentity(device, identity)
        #expect(w.f.run { w.events.count == 2 })
        #expect(
            w.events.last
                == .addressChanged(
                    device: path, oldAddress: rpa, oldAddressType: "random", address: identity, addressType: "public",
                    name: "phone"))
        #expect(w.f.run { w.watch.isBonded(path) })
        #expect(w.watch.connectedDevice(address: identity.lowercased()) == path)
        #expect(w.watch.connectedDevice(address: rpa) == nil)
        #expect(w.watch.address(device: path) == identity)
        #expect(w.watch.bonds.map(\.address) == [identity])
        try w.bluez.setConnected(device, false)
        #expect(w.f.run { w.events.count == 3 })
        #expect(w.events.last == .disconnected(device: path, address: identity, addressType: "public", name: "phone"))
    }

    @Test("a table change names the centrals away that bonded over a private address, not those connected or public")
    func tableChangedWhileAway() throws {
        let w = try Watched()
        let identity = "00:AA:01:01:00:01"
        let phone = try w.bluez.addDevice("6E:0D:A0:33:2C:6E", name: "phone", addressType: "random")
        let other = try w.bluez.addDevice("AA:BB:CC:DD:EE:01", name: "public")
        #expect(w.f.run { w.events.count == 2 })
        try w.bluez.setIdentity(phone, identity)
        #expect(w.f.run { w.events.count == 3 })
        #expect(w.watch.tableChanged().isEmpty, "a connected central gets Service Changed on its link")
        try w.bluez.setConnected(phone, false)
        try w.bluez.setConnected(other, false)
        #expect(w.f.run { w.events.count == 5 })
        #expect(w.watch.tableChanged() == [identity])
        try w.bluez.setConnected(phone, true)
        #expect(w.f.run { w.events.count == 6 })
        try w.bluez.setConnected(phone, false)
        #expect(w.f.run { w.events.count == 7 })
        #expect(w.watch.tableChanged() == [identity], "bluetoothd keeps it under the private address until it restarts")
        w.watch.adapterGone()
        #expect(w.watch.tableChanged().isEmpty, "a bluetoothd restart files the bond under the identity")
    }

    @Test("two objects with one address (a phone paired again with a new IRK) are one bond: the connected one")
    func twoObjectsOneAddress() throws {
        let identity = "00:AA:01:01:00:02"
        let w = try Watched { bluez in
            try bluez.addDevice(identity, connected: false, paired: true, pathAddress: "7A:00:00:00:00:01")
        }
        let newer = try w.bluez.addDevice(identity, paired: true, pathAddress: "7A:00:00:00:00:02")
        #expect(w.f.run { w.events.count == 1 })
        let bonds = w.watch.bonds
        #expect(bonds.map(\.address) == [identity])
        #expect(bonds.first?.device == newer.path.rawValue && bonds.first?.connected == true)
        #expect(
            w.watch.devices(address: identity)
                == ["/org/bluez/hci0/dev_7A_00_00_00_00_01", "/org/bluez/hci0/dev_7A_00_00_00_00_02"])
        #expect(w.watch.connectedDevice(address: identity) == newer.path.rawValue)
    }

    @Test("a re-pair with a new IRK: one bond for the identity, named by the link's object, then by the bonded one")
    func repairedWithNewIRK() throws {
        let identity = "00:AA:01:01:00:01"
        let w = try Watched { bluez in
            try bluez.addDevice(identity, connected: false, paired: true)
        }
        let older = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
        // The new RPA: a new object; pairing gives it the identity, and bluetoothd files the
        // keys under the older object (the first with that address), so it stays unpaired.
        let rpa = "41:9E:0C:94:B8:B3"
        let newer = try w.bluez.addDevice(rpa, addressType: "random")
        #expect(w.f.run { w.events.count == 1 })
        try w.bluez.setIdentity(newer, identity, bonded: false)
        #expect(w.f.run { w.events.count == 2 })
        #expect(
            w.events.last
                == .addressChanged(
                    device: newer.path.rawValue, oldAddress: rpa, oldAddressType: "random", address: identity,
                    addressType: "public", name: nil))
        #expect(
            w.watch.bonds
                == [
                    CentralWatch.Bond(
                        device: newer.path.rawValue, address: identity, addressType: "public", name: nil, paired: true,
                        bonded: true, trusted: false, connected: true)
                ])
        #expect(w.watch.devices(address: identity) == [older, newer.path.rawValue])
        #expect(w.watch.connectedDevice(address: identity) == newer.path.rawValue)
        #expect(w.watch.connected.map { [$0.device, $0.address, "\($0.bonded)"] } == [[newer.path.rawValue, identity, "true"]])
        try w.bluez.setConnected(newer, false)
        #expect(w.f.run { w.events.count == 3 })
        #expect(w.events.last == .disconnected(device: newer.path.rawValue, address: identity, addressType: "public", name: nil))
        // Not connected: the bonded one stands for it.
        #expect(w.watch.bonds.map(\.device) == [older])
        #expect(w.watch.bonds.map(\.connected) == [false])
        #expect(w.watch.device(address: identity) == older)
    }

    @Test("before 5.80 the newer object keeps Connected after its link ended: the address connecting again ends it")
    func staleLinkEndedByReturn() throws {
        let identity = "00:AA:01:01:00:01"
        var found: FakeDevice?
        let w = try Watched { bluez in
            found = try bluez.addDevice(identity, connected: false, paired: true)
        }
        let older = try #require(found)
        let newer = try w.bluez.addDevice("41:9E:0C:94:B8:B3", addressType: "random")
        try w.bluez.setIdentity(newer, identity, bonded: false)
        #expect(w.f.run { w.events.count == 2 })
        // The link ended; bluetoothd said nothing about the newer object. The phone returns
        // and bluetoothd finds the older object for it.
        try w.bluez.setConnected(older, true)
        #expect(w.f.run { w.events.count == 4 })
        #expect(
            Array(w.events.suffix(2)) == [
                .disconnected(device: newer.path.rawValue, address: identity, addressType: "public", name: nil),
                .connected(device: older.path.rawValue, address: identity, addressType: "public", name: nil),
            ])
        #expect(w.watch.connected.map(\.device) == [older.path.rawValue])
        #expect(w.watch.connectedDevice(address: identity) == older.path.rawValue)
        #expect(w.watch.bonds.map(\.device) == [older.path.rawValue])
    }

    @Test("of two bonded objects with one address, neither connected, the one that took the address later stands for it")
    func newerOfTwoBonded() throws {
        let identity = "00:AA:01:01:00:03"
        // The older sorts after the newer by path, so the path alone would choose it.
        let w = try Watched { bluez in
            try bluez.addDevice(identity, connected: false, paired: true, pathAddress: "7A:00:00:00:00:09")
        }
        let newer = try w.bluez.addDevice("7A:00:00:00:00:01", addressType: "random")
        #expect(w.f.run { w.events.count == 1 })
        try w.bluez.setIdentity(newer, identity)
        try w.bluez.setConnected(newer, false)
        #expect(w.f.run { w.events.count == 3 })
        #expect(w.watch.bonds.map(\.device) == [newer.path.rawValue])
        #expect(w.watch.devices(address: identity) == ["/org/bluez/hci0/dev_7A_00_00_00_00_09", newer.path.rawValue])
    }

    @Test("Powered changes of the adapter are reported; devices of other adapters and other senders are not")
    func poweredAndForeignSignals() throws {
        let w = try Watched()
        try w.bluez.setPowered(false)
        #expect(w.f.run { w.events == [.powered(false)] })
        try w.bluez.addDevice("AA:BB:CC:DD:EE:05", adapter: "hci1")
        let stranger = try w.f.stranger()
        try stranger.emitPropertiesChanged(
            path: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_06", interface: "org.bluez.Device1",
            changed: [("Connected", .bool(true))])
        w.f.settle(stranger)
        w.f.settle(w.bluez.connection)
        #expect(w.events == [.powered(false)])
    }
}

@Suite("NotifySocketModel: bluetoothd's socket model from the adapter's properties")
struct NotifySocketModelTests {
    @Test func theAdapterPropertiesShowTheRelease() {
        let base: Set<String> = ["Address", "Powered", "Roles", "ExperimentalFeatures"]
        #expect(NotifySocketModel(adapterProperties: base) == .shared)
        #expect(NotifySocketModel(adapterProperties: base.union(["Manufacturer", "Version"])) == .perCentral)
        #expect(
            NotifySocketModel(adapterProperties: base.union(["Manufacturer", "Version", "Connectable"])) == .targeted)
    }
}

