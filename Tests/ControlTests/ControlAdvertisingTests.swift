// SPDX-License-Identifier: MIT
import BlueZ
import Control
import DBusKit
import TestSupport
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"))
struct ControlAdvertisingTests {
    @Test func stopAndStartAreRecordedAndShownInStatus() throws {
        let fixture = try ControlFixture()
        fixture.start()
        #expect(fixture.call("StopAdvertising", [.string("main")]).map { (try? $0.get()) != nil } == true)
        #expect(fixture.persistence.savedAdvertisementEnabled(id: "main") == false)
        #expect(fixture.storage.saved.last?.advertisements["main"] == false)
        #expect(fixture.advertiser.states.first { $0.id == "main" }?.state == .disabled)
        let adverts = fixture.status("Advertisements")?.dictionaryEntries?.map { ($0.key.asString ?? "", $0.value.asString ?? "") }
        #expect(adverts?.map(\.0) == ["main", "beacon"])
        #expect(adverts?.map(\.1) == ["disabled", "waiting-for-adapter"])
        _ = fixture.call("StartAdvertising", [.string("main")])
        #expect(fixture.persistence.savedAdvertisementEnabled(id: "main") == true)
        #expect(fixture.advertiser.states.first { $0.id == "main" }?.state == .waitingForAdapter)
    }

    @Test func unknownAdvertisementIsRefused() throws {
        let fixture = try ControlFixture()
        fixture.start()
        let reply = fixture.call("StartAdvertising", [.string("nope")])
        #expect(reply.flatMap(error)?.name == "org.gattd.Error.UnknownAdvertisement")
        #expect(fixture.storage.saved.isEmpty)
    }

    @Test func savedStatesApplyAtStart() throws {
        let fixture = try ControlFixture(savedAdvertisements: ["beacon": false])
        fixture.manager.restoreAdvertisementStates()
        #expect(fixture.advertiser.states.map(\.state) == [.waitingForAdapter, .disabled])
    }
}
