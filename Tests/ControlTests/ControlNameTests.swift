// SPDX-License-Identifier: MIT
import BLEModel
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
        #expect(fixture.status("Refusals")?.asArray?.isEmpty == true)
        let refusal = Refusal(subject: .application, errorName: "org.bluez.Error.Failed", message: "Failed")
        fixture.manager.registrationChanged(.failed(adapter: "hci0", reason: "Failed", refusal: refusal))
        #expect(fixture.status("Registered")?.asBool == false)
        #expect(fixture.status("LastError")?.asString == "bluetoothd refused the application on hci0: Failed")
        let refusals = try #require(fixture.status("Refusals")?.asArray)
        #expect(refusals.count == 1)
        #expect(refusals.first?.variantDictionaryValue("Subject")?.asString == "application")
        #expect(refusals.first?.variantDictionaryValue("ErrorName")?.asString == "org.bluez.Error.Failed")
        #expect(refusals.first?.variantDictionaryValue("Message")?.asString == "Failed")
    }
}

/// `gattd --instance NAME` (gattd@NAME.service): the bus name and what may be an instance.
struct ControlInstanceNameTests {
    @Test func anInstanceOwnsOrgGattdDotName() {
        #expect(ControlNames.busName(instance: nil) == "org.gattd")
        #expect(ControlNames.busName(instance: "") == "org.gattd")
        #expect(ControlNames.busName(instance: "hci1") == "org.gattd.hci1")
    }

    @Test func instanceNamesAreOneBusNameElement() {
        for good in ["hci0", "hci1", "phones", "_x", "A_9", String(repeating: "a", count: 64)] {
            #expect(ControlNames.isValidInstance(good), "\(good)")
        }
        for bad in ["", "1hci", "hci-1", "hci.1", "a b", "é", String(repeating: "a", count: 65)] {
            #expect(!ControlNames.isValidInstance(bad), "\(bad)")
        }
    }
}
