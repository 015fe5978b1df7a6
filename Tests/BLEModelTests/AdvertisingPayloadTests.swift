// SPDX-License-Identifier: MIT

import BLEModel
import Testing

/// Byte budgets computed by hand from BlueZ 5.66 `src/shared/ad.c` / `src/advertising.c`.
@Suite("Advertising byte budget")
struct AdvertisingPayloadTests {
    private let custom128 = BluetoothUUID("12345678-1234-5678-1234-56789abcdef0")!

    private func payload(_ advertisement: AdvertisementDefinition) -> AdvertisingPayload {
        AdvertisingPayload(advertisement)
    }

    @Test("flags (3) + manufacturer data 4 + 24 is exactly 31 bytes and fits")
    func exactly31Fits() {
        let result = payload(.init(id: "a", manufacturerData: [(0xFFFF, [UInt8](repeating: 7, count: 24))]))
        #expect(result.advertisingData.length == 31)
        #expect(result.fits)
        #expect(result.problems.isEmpty)
    }

    @Test("one more payload byte makes 32 bytes: refused, naming what to shorten and by how much")
    func thirtyTwoRefused() {
        let result = payload(.init(id: "a", manufacturerData: [(0xFFFF, [UInt8](repeating: 7, count: 25))]))
        #expect(result.advertisingData.length == 32)
        #expect(result.advertisingData.overflow == 1)
        #expect(!result.fits)
        #expect(
            result.problems.first?.hasPrefix(
                "advertising data is 32 bytes, 1 over the 31-byte legacy limit; shorten manufacturerData 0xffff by 1 byte (to 24)")
                == true)
    }

    @Test("flags + one 128-bit service UUID is 21 bytes, leaving 10")
    func flagsAnd128BitUUID() {
        let result = payload(.init(id: "a", serviceUUIDs: [custom128]))
        #expect(result.advertisingData.structures.map(\.length) == [18, 3])
        #expect(result.advertisingData.structures.map(\.type) == [0x07, 0x01])
        #expect(result.advertisingData.limit - result.advertisingData.length == 10)
    }

    @Test("manufacturer data costs 4 bytes plus its payload: 6 payload bytes fill the 10 left")
    func manufacturerDataCost() {
        let result = payload(.init(id: "a", serviceUUIDs: [custom128], manufacturerData: [(0x004C, [1, 2, 3, 4, 5, 6])]))
        let manufacturer = result.advertisingData.structures.first { $0.type == 0xFF }
        #expect(manufacturer?.length == 10)
        #expect(result.advertisingData.length == 31 && result.fits)
        let oneMore = payload(.init(id: "a", serviceUUIDs: [custom128], manufacturerData: [(0x004C, [1, 2, 3, 4, 5, 6, 7])]))
        #expect(!oneMore.fits && oneMore.advertisingData.overflow == 1)
    }

    @Test("bluez_peripheral #26: flags + 128-bit UUID + Appearance + {0xFFFF: CP} is 31; CPA is refused")
    func bluezPeripheral26() {
        func advert(_ text: String) -> AdvertisementDefinition {
            .init(id: "a", serviceUUIDs: [custom128], manufacturerData: [(0xFFFF, Array(text.utf8))], appearance: 0x0341)
        }
        let cp = payload(advert("CP"))
        #expect(cp.advertisingData.length == 31 && cp.fits)
        let cpa = payload(advert("CPA"))
        #expect(cpa.advertisingData.length == 32 && !cpa.fits)
        // The name does not count here: it goes to the scan response.
        var named = advert("CP")
        named.localName = "bluez_peripheral"
        #expect(payload(named).advertisingData.length == 31 && payload(named).scanResponse.length == 18)
    }

    @Test("a 29-byte name is complete (31 bytes); a 30-byte one becomes a shortened name cut to 29 bytes")
    func nameShortening() {
        let fits = payload(.init(id: "a", localName: String(repeating: "n", count: 29)))
        #expect(fits.scanResponse.structures.map(\.type) == [0x09])
        #expect(fits.scanResponse.length == 31)
        let long = payload(.init(id: "a", localName: "abcdefghijklmnopqrstuvwxyz0123"))
        let name = long.scanResponse.structures[0]
        #expect(name.type == 0x08 && name.length == 31 && name.payloadLength == 29)
        #expect(name.detail.hasPrefix("\"abcdefghijklmnopqrstuvwxyz012\""))
        #expect(long.fits)
    }

    @Test("includes appearance: the kernel's 4 bytes push a 29-byte name 4 over in the scan response")
    func appearanceIncludeInScanResponse() {
        let result = payload(.init(id: "a", localName: String(repeating: "n", count: 29), includes: [.appearance]))
        #expect(result.scanResponse.length == 35)
        #expect(result.problems.contains { $0.hasPrefix("scan response is 35 bytes, 4 over") && $0.contains("shorten localName by 4 bytes (to 25)") })
        // In the AD: appearance 0x0000 (4) that bluetoothd writes, flags (3), and 4 reserved.
        #expect(result.advertisingData.length == 11)
        #expect(result.advertisingData.structures.map(\.origin) == [.bluetoothd, .bluetoothd, .reserved])
    }

    @Test("structures come in bluetoothd's order: UUID lists by width, solicit, manufacturer, service data, appearance, data, flags, tx power")
    func order() {
        let result = payload(
            .init(
                id: "a", serviceUUIDs: [BluetoothUUID(uuid16: 0x180D), BluetoothUUID(uuid32: 0x0001_180D)],
                solicitUUIDs: [BluetoothUUID(uuid16: 0x180F)], manufacturerData: [(0x004C, [2])],
                serviceData: [(BluetoothUUID(uuid16: 0xFEAA), [0x10])], data: [(0x26, [1])], appearance: 0x03C1,
                includes: [.txPower]))
        #expect(result.advertisingData.structures.map(\.type) == [0x03, 0x05, 0x14, 0xFF, 0x16, 0x19, 0x26, 0x01, 0x0A])
        #expect(result.advertisingData.structures.map(\.length) == [4, 6, 4, 5, 5, 4, 3, 3, 3])
        #expect(result.advertisingData.length == 37 && !result.fits)
        #expect(result.advertisingData.structures.last?.origin == .kernel)
    }

    @Test("several 16-bit UUIDs share one list: 2 + 2n")
    func uuidListGrouping() {
        let result = payload(
            .init(id: "a", type: .broadcast, serviceUUIDs: [0x180D, 0x180F, 0x1810].map { BluetoothUUID(uuid16: $0) }))
        #expect(result.advertisingData.structures.count == 1)
        #expect(result.advertisingData.length == 8)
        #expect(result.advertisingData.summary == "advertising data 8/31 bytes: 16-bit service UUIDs (180d,180f,1810) 8")
    }

    @Test("a broadcast advertisement has no flags")
    func broadcastHasNoFlags() {
        let result = payload(.init(id: "b", type: .broadcast, manufacturerData: [(0xFFFF, [])]))
        #expect(result.advertisingData.structures.map(\.type) == [0xFF])
        #expect(result.advertisingData.length == 4)
    }

    @Test("a data type bluetoothd generates itself is refused even when it fits")
    func reservedDataType() {
        let result = payload(.init(id: "a", data: [(type: UInt8(0x09), value: [UInt8(ascii: "x")])]))
        #expect(result.advertisingData.fits)
        #expect(!result.fits)
        #expect(result.problems == [
            "data type 0x09 (Complete Local Name) is one bluetoothd generates itself; bluetoothd 5.66 refuses it in "
                + "\"data\" (\"Failed to parse advertisement.\")"
        ])
    }

    @Test("includes local-name is counted at its maximum and reported as depending on the adapter")
    func kernelLocalName() {
        let result = payload(.init(id: "a", includes: [.localName]))
        #expect(result.scanResponse.isVariable)
        #expect(result.scanResponse.summary.hasPrefix("scan response up to 13/31 bytes: local name of the adapter"))
        #expect(result.notes.contains { $0.contains("adapter's name") })
    }

    @Test("connectable with a secondary channel: the name moves into the AD, cut to what is left")
    func secondaryChannelName() {
        let result = payload(
            .init(
                id: "a", localName: "a-rather-long-device-name", serviceUUIDs: [custom128],
                discoverable: false, secondaryChannel: .twoM))
        #expect(result.scanResponse.structures.isEmpty)
        let name = result.advertisingData.structures[1]
        #expect(name.type == 0x08 && name.length == 13)
        #expect(result.advertisingData.length == 31 && result.fits)
    }

    @Test("--check refuses an overflowing config at its JSON path")
    func configurationValidation() throws {
        let json = """
            {"version": 1, "services": [],
             "advertisements": [{"id": "main", "serviceUUIDs": ["12345678-1234-5678-1234-56789abcdef0"],
                                 "manufacturerData": {"0xFFFF": {"hex": "00112233445566"}}}]}
            """
        guard case .failure(let errors) = ConfigurationLoader.parse(Array(json.utf8)) else {
            Issue.record("an advertisement 1 byte over the limit was accepted")
            return
        }
        let issue = try #require(errors.issues.first)
        #expect(issue.path == "advertisements[0]")
        #expect(issue.message.hasPrefix("advertising data is 32 bytes, 1 over the 31-byte legacy limit; shorten manufacturerData 0xffff by 1 byte (to 6)"))
        #expect(issue.line == 2)
    }
}
