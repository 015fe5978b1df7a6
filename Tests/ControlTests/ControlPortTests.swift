// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import Control
import DBusKit
import TestSupport
import Testing

/// The pairing window and the centrals as the port's closures stand for them.
private final class FakeBlueZSide {
    var open = false
    var opened: [Int] = []
    var removed: [String] = []
    var disconnected: [String] = []
    let bond = CentralWatch.Bond(
        device: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01", address: "AA:BB:CC:DD:EE:01", name: "phone", paired: true,
        bonded: true, trusted: false, connected: true)

    func port(_ advertiser: Advertiser) -> ControlPort {
        ControlPort(
            advertising: .init(advertiser),
            security: SecurityDefinition(pairing: .justWorks, pairable: .window(seconds: 60)),
            pairingWindow: .init(
                isOpen: { self.open }, secondsLeft: { self.open ? 30 : nil },
                open: { seconds in
                    self.opened.append(seconds)
                    self.open = true
                    return nil
                }),
            centrals: .init(
                bonds: { [self.bond] },
                devices: { address in address.uppercased() == self.bond.address ? [self.bond.device] : [] },
                remove: { device, completion in
                    self.removed.append(device)
                    completion(nil)
                },
                connected: { [] }, connectedDevice: { _ in nil },
                disconnect: { device, completion in
                    self.disconnected.append(device)
                    completion(nil)
                }),
            acquiredSockets: { id in id == "hr" ? (notify: 2, write: 1) : (notify: 0, write: 0) })
    }
}

@Suite("ControlManager through its port", .serialized, .enabled(if: PrivateBus.isAvailable))
struct ControlPortTests {
    @Test("OpenPairing, GetStatus, ListBonds, RemoveBond, the centrals and the socket counts reach the port's closures")
    func pairingAndBondsThroughThePort() throws {
        let side = FakeBlueZSide()
        let f = try ControlFixture(port: side.port)
        #expect(f.start() == .owned)
        #expect(f.status("PairingOpen") == .bool(false))
        #expect(try f.call("OpenPairing", [.uint32(0)])?.get() == [.uint32(60)], "0: the configured length")
        #expect(side.opened == [60])
        #expect(f.status("PairingOpen") == .bool(true))
        #expect(f.status("PairingSecondsLeft") == .uint32(30))

        let bonds = try #require(try f.call("ListBonds")?.get().first?.asArray)
        #expect(bonds.count == 1)
        #expect(bonds.first?.variantDictionaryValue("Address") == .string("AA:BB:CC:DD:EE:01"))
        #expect(bonds.first?.variantDictionaryValue("Name") == .string("phone"))

        guard case .failure(let unknown)? = f.call("RemoveBond", [.string("AA:BB:CC:DD:EE:02")]) else {
            Issue.record("an unknown bond was removed")
            return
        }
        #expect(unknown.name == "org.gattd.Error.UnknownBond")
        #expect(try f.call("RemoveBond", [.string("aa:bb:cc:dd:ee:01")])?.get() == [])
        #expect(side.removed == ["/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"])

        // The bonded central is not connected in this port: nobody to disconnect.
        #expect(try f.call("ListCentrals")?.get().first?.asArray?.isEmpty == true)
        guard case .failure(let notConnected)? = f.call("DisconnectCentral", [.string("AA:BB:CC:DD:EE:01")]) else {
            Issue.record("a central that is not connected was disconnected")
            return
        }
        #expect(notConnected.name == "org.gattd.Error.UnknownCentral")
        #expect(side.disconnected.isEmpty)

        let listed = try #require(try f.call("ListCharacteristics")?.get().first?.asArray)
        let hr = try #require(listed.first { $0.variantDictionaryValue("Id") == .string("hr") })
        #expect(hr.variantDictionaryValue("NotifySockets") == .uint32(2))
        #expect(hr.variantDictionaryValue("WriteSockets") == .uint32(1))
    }

    @Test("RemoveBond removes every object of the address, and none once a newer one came meanwhile")
    func removeBondStopsAtANewerObject() throws {
        let address = "00:AA:01:01:00:01"
        let bond = CentralWatch.Bond(
            device: "/org/bluez/hci0/dev_B", address: address, name: nil, paired: true, bonded: true, trusted: false,
            connected: false)
        var objects = ["/org/bluez/hci0/dev_A", "/org/bluez/hci0/dev_B", "/org/bluez/hci0/dev_C"]
        var removed: [String] = []
        // After the first removal the phone pairs again: a new object with the address.
        var pairsAgain = true
        let centrals = ControlPort.Centrals(
            bonds: { [bond] }, devices: { _ in objects }, address: { _ in address },
            remove: { device, completion in
                removed.append(device)
                objects.removeAll { $0 == device }
                if pairsAgain { objects.append("/org/bluez/hci0/dev_NEW") }
                completion(nil)
            },
            connected: { [] }, connectedDevice: { _ in nil }, disconnect: { _, completion in completion(nil) })
        let f = try ControlFixture { _ in ControlPort(centrals: centrals) }
        #expect(f.start() == .owned)
        #expect(try f.call("RemoveBond", [.string(address)])?.get() == [])
        #expect(removed == ["/org/bluez/hci0/dev_A"], "the newer bond is left: removing B would unpair the address")
        #expect(objects == ["/org/bluez/hci0/dev_B", "/org/bluez/hci0/dev_C", "/org/bluez/hci0/dev_NEW"])

        objects = ["/org/bluez/hci0/dev_A", "/org/bluez/hci0/dev_B"]
        removed = []
        pairsAgain = false
        #expect(try f.call("RemoveBond", [.string(address)])?.get() == [])
        #expect(removed == ["/org/bluez/hci0/dev_A", "/org/bluez/hci0/dev_B"])
    }

    @Test("without a pairing window in the port, OpenPairing is refused with the reason")
    func noWindowRefuses() throws {
        let f = try ControlFixture()
        #expect(f.start() == .owned)
        guard case .failure(let error)? = f.call("OpenPairing", [.uint32(10)]) else {
            Issue.record("OpenPairing was served without a pairing window")
            return
        }
        #expect(error.name == "org.gattd.Error.PairingUnavailable")
        #expect(error.message.contains("does not pair"))
    }
}
