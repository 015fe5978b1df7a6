// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import DBusKit
import TestSupport
import Testing

private let mainPath = "/org/gattd/adv/main"
private let beaconPath = "/org/gattd/adv/beacon"

extension BlueZFixture {
    func state(of id: String) -> Advertiser.State? { advertiser.states.first { $0.id == id }?.state }
}

/// The `RegisterAdvertisement` calls for `path`.
private func registrations(_ bluez: FakeBlueZ, _ path: String) -> Int {
    bluez.calls("RegisterAdvertisement").filter { $0.object == path }.count
}

@Suite("Advertiser against a stand-in bluetoothd", .serialized, .enabled(if: PrivateBus.isAvailable))
struct AdvertiserTests {
    @Test("each enabled advertisement is registered with its LEAdvertisement1 properties; a disabled one is not")
    func registersWithProperties() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        #expect(f.advertiser.advertisingIDs == ["main", "beacon"])
        #expect(f.state(of: "spare") == .disabled)
        #expect(Set(bluez.calls("RegisterAdvertisement").map(\.object)) == [mainPath, beaconPath])
        #expect(bluez.calls("RegisterAdvertisement").allSatisfy { $0.adapter == "hci0" })
        let adapter = try #require(bluez.adapters["hci0"])
        #expect(adapter.activeInstances == 2)

        let main = try #require(adapter.advertisements[mainPath])
        #expect(main["Type"] == .string("peripheral"))
        #expect(main["LocalName"] == .string("gattd-test"))
        #expect(main["ServiceUUIDs"]?.asStringArray == ["180f"])
        let manufacturer = try #require(main["ManufacturerData"]?.dictionaryEntries?.first)
        #expect(manufacturer.key == .uint16(0xFFFF))
        #expect(manufacturer.value.asBytes == [0x01, 0x02])
        #expect(main["Discoverable"] == .bool(true))
        #expect(main["Timeout"] == nil)

        let beacon = try #require(adapter.advertisements[beaconPath])
        #expect(beacon["Type"] == .string("broadcast"))
        #expect(beacon["Timeout"] == .uint16(10))
        #expect(beacon["LocalName"] == nil)
    }

    @Test("Release from bluetoothd: registered again after the back-off, not before")
    func releaseReregistersAfterBackoff() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        try bluez.release(advertisement: objectPath(mainPath), of: f.connection.uniqueName)
        #expect(f.run { f.state(of: "main") == .waitingForAdapter })
        #expect(f.clock.nextDelay == .seconds(1))
        f.clock.advance(by: .milliseconds(900))
        f.settle(bluez.connection)
        #expect(registrations(bluez, mainPath) == 1)
        f.clock.advance(by: .milliseconds(100))
        #expect(f.run { f.state(of: "main") == .advertising })
        #expect(registrations(bluez, mainPath) == 2)
        #expect(registrations(bluez, beaconPath) == 1)
    }

    @Test("Release once the advertisement's own timeout ran out: expired, not registered again")
    func releaseAfterTimeoutExpires() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        f.clock.advance(by: .seconds(10))
        try bluez.release(advertisement: objectPath(beaconPath), of: f.connection.uniqueName)
        #expect(f.run { f.state(of: "beacon") == .expired })
        f.clock.advance(by: .seconds(30))
        f.settle(bluez.connection)
        #expect(registrations(bluez, beaconPath) == 1)
        #expect(f.advertiser.advertisingIDs == ["main"])
        #expect(f.advertiser.isSettled)
    }

    @Test("Release before the advertisement's timeout (the adapter going away): registered again")
    func releaseBeforeTimeout() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        f.clock.advance(by: .seconds(3))
        try bluez.release(advertisement: objectPath(beaconPath), of: f.connection.uniqueName)
        #expect(f.run { f.state(of: "beacon") == .waitingForAdapter })
        f.clock.advance(by: .seconds(1))
        #expect(f.run { f.state(of: "beacon") == .advertising })
        #expect(registrations(bluez, beaconPath) == 2)
    }

    @Test("Release from a process that is not bluetoothd is refused and changes nothing")
    func releaseFromStranger() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        let stranger = try f.stranger()
        var result: Result<Message, DBusError>?
        stranger.call(
            destination: f.connection.uniqueName, path: objectPath(mainPath), interface: "org.bluez.LEAdvertisement1",
            member: "Release"
        ) { result = $0 }
        #expect(f.run { result != nil })
        #expect(try errorName(#require(result)) == DBusError.Name.accessDenied)
        #expect(f.state(of: "main") == .advertising)
        #expect(f.clock.pendingCount == 0)
        f.clock.advance(by: .seconds(5))
        f.settle(bluez.connection)
        #expect(registrations(bluez, mainPath) == 1)
    }

    @Test("more advertisements than free instances: the extra one is refused in plain words, not retried")
    func instanceLimit() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ(supportedInstances: 1)
        #expect(f.startRegistered())
        #expect(f.advertiser.advertisingIDs.count == 1)
        let refused = try #require(f.advertiser.states.first { if case .refused = $0.state { true } else { false } })
        guard case .refused(let reason, let refusal) = refused.state else { return }
        #expect(reason.contains("no free advertising instance"))
        #expect(reason.contains("Maximum advertisements reached"))
        #expect(refusal == Refusal(subject: .advertisement, errorName: "org.bluez.Error.NotPermitted", message: "Maximum advertisements reached"))
        #expect(f.clock.pendingCount == 0)
        f.clock.advance(by: .seconds(60))
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterAdvertisement").count == 2)
    }

    @Test("RegisterAdvertisement without an answer (NoReply) is retried after the back-off")
    func noReplyRetried() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        adapter.registerAdvertisementErrors = [DBusError(name: DBusError.Name.noReply, message: "no reply")]
        #expect(f.startRegistered())
        let refused = f.advertiser.states.filter { if case .refused = $0.state { true } else { false } }
        #expect(refused.count == 1)
        #expect(f.clock.nextDelay == .seconds(1))
        f.clock.advance(by: .seconds(1))
        #expect(f.run { f.advertiser.advertisingIDs.count == 2 })
        #expect(bluez.calls("RegisterAdvertisement").count == 3)
    }

    @Test("a parse failure is reported with the payload summary and not retried")
    func parseFailureNotRetried() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        try #require(bluez.adapters["hci0"]).registerAdvertisementErrors = [
            DBusError(name: "org.bluez.Error.Failed", message: "Failed to parse advertisement.")
        ]
        #expect(f.startRegistered())
        let refused = f.advertiser.states.compactMap { if case .refused(let reason, _) = $0.state { reason } else { nil } }
        #expect(refused.count == 1)
        #expect(refused.first?.contains("bluetoothd could not parse it") == true)
        #expect(f.clock.pendingCount == 0)
    }

    @Test("AlreadyExists from bluetoothd counts as advertising")
    func alreadyExists() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        try #require(bluez.adapters["hci0"]).registerAdvertisementErrors = [
            DBusError(name: "org.bluez.Error.AlreadyExists", message: "Already Exists")
        ]
        #expect(f.startRegistered())
        #expect(f.advertiser.advertisingIDs == ["main", "beacon"])
    }

    @Test("powered on after the kernel lost the instances: every advertisement is registered again")
    func poweredOnAfterLoss() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        try bluez.setPowered(false)
        f.settle(bluez.connection)
        #expect(f.advertiser.advertisingIDs == ["main", "beacon"])
        #expect(bluez.calls("UnregisterAdvertisement").isEmpty)
        bluez.dropAdvertisements()
        try bluez.setPowered(true)
        #expect(f.run { registrations(bluez, mainPath) == 2 && registrations(bluez, beaconPath) == 2 })
        #expect(f.run { f.advertiser.advertisingIDs == ["main", "beacon"] })
        #expect(bluez.adapters["hci0"]?.activeInstances == 2)
    }

    @Test("powered on with the instances still active: nothing is registered again")
    func poweredOnStillActive() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        try bluez.setPowered(false)
        try bluez.setPowered(true)
        f.settle(bluez.connection)
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterAdvertisement").count == 2)
        #expect(bluez.calls("UnregisterAdvertisement").isEmpty)
    }

    @Test("bluetoothd leaving: advertisements wait; a new bluetoothd gets them registered again")
    func blueZRestart() throws {
        let f = try BlueZFixture()
        let first = try f.startBlueZ()
        #expect(f.startRegistered())
        first.releaseName()
        #expect(f.run { f.state(of: "main") == .waitingForAdapter && f.state(of: "beacon") == .waitingForAdapter })
        #expect(f.advertiser.advertisingIDs.isEmpty)
        let second = try f.startBlueZ()
        #expect(f.run { f.advertiser.advertisingIDs == ["main", "beacon"] })
        #expect(second.calls("RegisterAdvertisement").count == 2)
    }

    /// gattd started on an adapter whose LEAdvertisingManager1 is not there yet: the
    /// application is registered, no advertisement is.
    private func startWithoutManager() throws -> (BlueZFixture, FakeBlueZ, FakeAdapter) {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        adapter.advertisingManagerReady = false
        f.start()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterAdvertisement").isEmpty)
        return (f, bluez, adapter)
    }

    @Test("an adapter without LEAdvertisingManager1 yet: registered once the interface is added")
    func managerAppearsLate() throws {
        let (f, bluez, _) = try startWithoutManager()
        #expect(!f.advertiser.isSettled)
        try bluez.announceAdvertisingManager()
        #expect(f.run { f.advertiser.advertisingIDs == ["main", "beacon"] })
    }

    @Test("two events asking at once (adapter found, manager added): each advertisement is registered once")
    func concurrentTriggersRegisterOnce() throws {
        let (f, bluez, adapter) = try startWithoutManager()
        // As after a bluetoothd restart (gattd-full's log): the adapter's arrival and the
        // manager's InterfacesAdded both ask for the instance counts before either answer is in.
        adapter.advertisingManagerReady = true
        let added = BlueZSession.Event.interfacesAdded(
            path: adapter.path, interfaces: ["org.bluez.LEAdvertisingManager1": [:]])
        f.advertiser.handle(added)
        f.advertiser.handle(added)
        #expect(f.run { f.advertiser.advertisingIDs == ["main", "beacon"] })
        f.settle(bluez.connection)
        f.settle(bluez.connection)
        #expect(registrations(bluez, mainPath) == 1)
        #expect(registrations(bluez, beaconPath) == 1)
    }

    @Test("an update goes out as one PropertiesChanged, with dropped properties invalidated")
    func updateEmitsPropertiesChanged() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        let changes = bluez.recordAdvertisementChanges()
        f.settle(bluez.connection)
        var definition = try #require(f.configuration.advertisements.first { $0.id == "main" })
        definition.localName = "renamed"
        definition.serviceUUIDs = []
        #expect(f.advertiser.update(id: "main", definition: definition).isEmpty)
        #expect(f.run { !changes.signals.isEmpty })
        let signal = try #require(changes.signals.first)
        #expect(signal.path == mainPath)
        #expect(signal.changed.map(\.0) == ["LocalName"])
        #expect(signal.changed.first?.1 == .string("renamed"))
        #expect(signal.invalidated == ["ServiceUUIDs"])
        #expect(registrations(bluez, mainPath) == 1)
        #expect(!f.advertiser.update(id: "nope", definition: definition).isEmpty)
    }

    @Test("disabling unregisters; enabling again registers")
    func disableAndEnable() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        var definition = try #require(f.configuration.advertisements.first { $0.id == "main" })
        definition.enabled = false
        f.advertiser.update(id: "main", definition: definition)
        #expect(f.state(of: "main") == .disabled)
        #expect(f.run { bluez.calls("UnregisterAdvertisement").map(\.object) == [mainPath] })
        definition.enabled = true
        f.advertiser.update(id: "main", definition: definition)
        #expect(f.run { f.state(of: "main") == .advertising })
        #expect(registrations(bluez, mainPath) == 2)
    }

    @Test("a central disconnecting re-registers only advertisements with readvertiseAfterDisconnect")
    func readvertiseAfterDisconnect() throws {
        let text = BlueZFixture.configurationText.replacing(
            #""localName": "gattd-test","#, with: #""localName": "gattd-test", "readvertiseAfterDisconnect": true,"#)
        let f = try BlueZFixture(configurationText: text)
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        try bluez.disconnect(device: "dev_00_11_22_33_44_66")
        #expect(f.run { registrations(bluez, mainPath) == 2 && f.state(of: "main") == .advertising })
        #expect(bluez.calls("UnregisterAdvertisement").map(\.object) == [mainPath])
        #expect(registrations(bluez, beaconPath) == 1)
    }

    @Test("the configured alias is set on the adapter and the adapter's own name put back at stop")
    func aliasSetAndRestored() throws {
        let text = BlueZFixture.configurationText.replacing(
            #"{"version": 1,"#, with: #"{"version": 1, "alias": "gattd-board","#)
        let f = try BlueZFixture(configurationText: text)
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        let adapter = try #require(bluez.adapters["hci0"])
        #expect(f.run { adapter.aliasWrites == ["gattd-board"] })
        var stopped = false
        f.advertiser.stop { stopped = true }
        #expect(f.run { stopped })
        // The alias equalled the adapter's name: "" gives bluetoothd's default back.
        #expect(adapter.aliasWrites == ["gattd-board", ""])
        #expect(Set(bluez.calls("UnregisterAdvertisement").map(\.object)) == [mainPath, beaconPath])
        #expect(adapter.activeInstances == 0)
    }
}
