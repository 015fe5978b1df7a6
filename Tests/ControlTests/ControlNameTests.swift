// SPDX-License-Identifier: MIT
import BlueZ
import Control
import ControlAPI
import DBusKit
import TestSupport
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"))
struct ControlNameTests {
    @Test func aTakenNameLeavesNoControlObject() throws {
        let fixture = try ControlFixture()
        // The client takes org.gattd first.
        var taken: UInt32?
        fixture.client.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "RequestName", arguments: [.string(ControlNames.busName), .uint32(4)]
        ) { taken = (try? $0.get().arguments())?.first?.asUInt32 }
        fixture.loop.run(until: { taken != nil }, timeout: .seconds(5))
        #expect(taken == 1)
        guard case .unavailable(let reason) = fixture.start() else {
            Issue.record("expected the name to be unavailable, got \(fixture.manager.nameState)")
            return
        }
        #expect(reason == "org.gattd is owned by another process")
        // Called at gattd's unique name: /org/gattd is only the parent of /org/gattd/adv now.
        let direct = fixture.call("GetStatus", destination: fixture.server.uniqueName)
        #expect(direct.flatMap(error)?.name == DBusError.Name.unknownInterface)
    }

    @Test func statusReportsRegistrationAndSubscriptions() throws {
        let fixture = try ControlFixture()
        fixture.start()
        fixture.manager.registrationChanged(.registered(adapter: "hci0"))
        let hr = try #require(fixture.database["hr"])
        fixture.database.setNotifying(hr, true)
        #expect(fixture.status("Version")?.asString == "test-1")
        #expect(fixture.status("Adapter")?.asString == "hci0")
        #expect(fixture.status("Registered")?.asBool == true)
        #expect(fixture.status("Subscriptions")?.asUInt32 == 1)
        #expect(fixture.status("LastError")?.asString == "")
        fixture.manager.registrationChanged(.failed(adapter: "hci0", reason: "Failed"))
        #expect(fixture.status("Registered")?.asBool == false)
        #expect(fixture.status("LastError")?.asString == "bluetoothd refused the application on hci0: Failed")
    }
}
