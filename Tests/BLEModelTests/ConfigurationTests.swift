// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("Configuration decoding")
struct ConfigurationTests {
    private func fixture(_ name: String) throws -> Configuration {
        try Fixtures.load(path: Fixtures.path("valid", name)).get().configuration
    }

    @Test("the issue's example decodes into the documented model")
    func contractExample() throws {
        let configuration = try fixture("contract-example")
        #expect(configuration.adapter == "hci0")
        #expect(configuration.alias == nil)
        let heartRate = configuration.services[0]
        #expect(heartRate.id == "heart-rate")
        #expect(heartRate.uuid == BluetoothUUID(uuid16: 0x180D))
        #expect(heartRate.primary)
        #expect(heartRate.includes == ["battery"])
        let measurement = heartRate.characteristics[0]
        #expect(measurement.flags == [.notify])
        #expect(measurement.value == [0, 72])
        #expect(measurement.minLength == 0 && measurement.maxLength == 512)
        #expect(measurement.descriptors[0].id == "hr-measurement.2901")
        #expect(measurement.descriptors[0].value == Array("Heart rate".utf8))
        #expect(measurement.descriptors[0].flags == [.read])
        let label = heartRate.characteristics[1]
        #expect(label.uuid.description == "12345678-1234-5678-1234-56789abcdef1")
        #expect(label.flags == [.read, .write])
        #expect(label.minLength == 1 && label.maxLength == 20)
        #expect(label.persist == nil && label.update == nil && label.onWrite == nil && label.notifyIntervalMs == nil)
        let battery = configuration.services[1]
        #expect(!battery.primary)
        #expect(battery.characteristics[0].value == [100])
        #expect(configuration.advertisements.isEmpty)
    }

    @Test("included services are registered before their includers, otherwise file order")
    func registrationOrder() throws {
        #expect(try fixture("contract-example").servicesInRegistrationOrder.map(\.id) == ["battery", "heart-rate"])
        let chain = try load(
            """
            {"version": 1, "services": [
              {"id": "a", "uuid": "AA01", "includes": ["c"]},
              {"id": "b", "uuid": "AA02"},
              {"id": "c", "uuid": "AA03", "includes": ["d"]},
              {"id": "d", "uuid": "AA04"},
              {"id": "e", "uuid": "AA05", "includes": ["a", "b"]}
            ]}
            """
        ).get().configuration
        #expect(chain.servicesInRegistrationOrder.map(\.id) == ["b", "d", "c", "a", "e"])
    }

    @Test("absent ids are derived stably, with suffixes for repeats")
    func derivedIDs() throws {
        let configuration = try fixture("derived-ids")
        #expect(configuration.services.map(\.id) == ["svc-180d", "svc-180d-2", "svc-12345678-1234-5678-1234-56789abcdef0"])
        let characteristics = configuration.services[0].characteristics
        #expect(characteristics.map(\.id) == ["svc-180d.2a37", "svc-180d.2a37-2"])
        #expect(characteristics[0].descriptors[0].id == "svc-180d.2a37.2901")
        #expect(configuration.services[2].characteristics[0].id == "named")
        #expect(configuration.advertisements.map(\.id) == ["adv", "adv-2"])
    }

    @Test("a derived id never takes an explicit one")
    func derivedAvoidsExplicit() throws {
        let configuration = try load(
            #"{"version": 1, "services": [{"uuid": "180F"}, {"id": "svc-180f", "uuid": "180D"}]}"#
        ).get().configuration
        #expect(configuration.services.map(\.id) == ["svc-180f-2", "svc-180f"])
    }

    @Test("updates and write hooks decode with their defaults")
    func updates() throws {
        let characteristics = try fixture("updates").services[0].characteristics
        #expect(
            characteristics[0].update
                == UpdateDefinition(
                    everyMs: 1000, source: .counter(start: 5, step: 5, min: 0, max: 100),
                    encode: ValueTemplate(segments: [.number(.int16)])))
        let random = try #require(characteristics[1].update)
        #expect(random.source == .random(min: 0, max: 100, integer: true))
        #expect(random.encode == .uint8Slot && random.whileUnsubscribed && random.notifyUnchanged)
        #expect(characteristics[1].notifyIntervalMs == 50)
        #expect(
            characteristics[2].update?.source
                == .file(path: "/sys/class/thermal/thermal_zone0/temp", format: .number, scale: 0.001, offset: 0))
        #expect(characteristics[2].update?.encode == ValueTemplate(segments: [.bytes([0]), .number(.sfloat)]))
        #expect(characteristics[3].update?.encode == nil)
        #expect(characteristics[3].update?.everyMs == 10)
        #expect(characteristics[4].update?.source == .command(argv: ["/bin/hostname"], timeoutMs: 500, format: .text))
        #expect(characteristics[4].update?.encode == .utf8Slot)
        #expect(characteristics[4].persist == false)
        #expect(characteristics[5].onWrite == WriteHook(argv: ["/usr/local/bin/control", "--apply"], timeoutMs: 2000, decides: true))
        #expect(characteristics[5].persist == true)
    }

    @Test("advertisement keys decode, with type-dependent defaults")
    func advertisements() throws {
        let adverts = try fixture("advertisements").advertisements
        let main = adverts[0]
        #expect(main.type == .peripheral && main.localName == "gattd")
        #expect(main.serviceUUIDs == [BluetoothUUID(uuid16: 0x180D)])
        #expect(main.manufacturerData.map(\.companyID) == [0x004C, 0xFFFF])
        #expect(main.manufacturerData.map(\.value) == [[0x02, 0x15], [0x01, 0x78]])
        #expect(main.data.map(\.type) == [0x26])
        #expect(main.appearance == 0x03C1 && main.includes == [.txPower])
        #expect(main.discoverable && main.discoverableTimeout == 30 && main.timeout == 60 && main.duration == 2)
        #expect(main.minInterval == 100 && main.maxInterval == 200 && main.txPower == -4)
        #expect(main.secondaryChannel == nil && main.enabled && main.readvertiseAfterDisconnect)
        let beacon = adverts[1]
        #expect(beacon.type == .broadcast && !beacon.discoverable && !beacon.enabled)
        #expect(beacon.appearance == 961 && beacon.includes == [.localName])
        #expect(!beacon.readvertiseAfterDisconnect)
        // Split off from "main" to keep both within the 31-byte legacy budget.
        let extra = adverts[2]
        #expect(extra.type == .peripheral && !extra.discoverable)
        #expect(extra.serviceUUIDs == [BluetoothUUID("12345678-1234-5678-1234-56789abcdef0")!])
        #expect(extra.solicitUUIDs == [BluetoothUUID(uuid16: 0x180F)])
        #expect(extra.serviceData.map(\.uuid) == [BluetoothUUID(uuid16: 0xFEAA)])
        #expect(extra.data.map(\.type) == [36] && extra.secondaryChannel == .oneM)
    }

    @Test("typed values in a config decode to their bytes")
    func typedValues() throws {
        let characteristics = try fixture("typed-values").services[0].characteristics
        #expect(characteristics[0].value == [0x0A, 0x1B, 0x2C, 0x3D])
        #expect(characteristics[1].value == Array("héllo 😀".utf8))
        #expect(characteristics[2].value == Array("hello".utf8))
        #expect(characteristics[3].value == [0, 127, 255])
        #expect(characteristics[4].value.count == 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8)
        #expect(characteristics[6].value == [0x6C, 0xF1, 0xFF, 0x07])
        #expect(characteristics[7].value == [])
    }

    @Test("write with write-without-response loads with a warning")
    func writeWithoutResponseWarning() throws {
        let loaded = try load(
            #"{"version": 1, "services": [{"uuid": "180D", "characteristics": [{"uuid": "2A39", "flags": ["write", "write-without-response"]}]}]}"#
        ).get()
        #expect(
            loaded.warnings.map(\.description) == [
                "warning: services[0].characteristics[0].flags: \"write\" together with \"write-without-response\": "
                    + "bluetoothd acknowledges writes to such a characteristic without asking gattd, so gattd cannot "
                    + "refuse them"
            ])
        #expect(loaded.warnings[0].severity == .warning)
        #expect(loaded.warnings[0].line == 1)
    }

    @Test("all problems are reported at once, in file order, with positions")
    func allProblemsAtOnce() throws {
        let text = """
            {
              "version": 1,
              "services": [
                {"id": "a", "uuid": "1800", "characteristics": [
                  {"uuid": "2A37", "flags": ["notfy", "write", "write-without-response"]},
                  {"id": "a", "uuid": "2A38", "flags": ["read"], "value": {"uint8": 300}}
                ]}
              ],
              "advertisements": [{"type": "broadcast", "discoverable": true}]
            }
            """
        let errors = try #require(load(text).failure)
        // The first characteristic is damaged (unknown flag), so its flag-combination warning is
        // not evaluated on the partial flag list.
        #expect(
            errors.issues.map(\.description) == [
                "services[0].uuid: UUID 0x1800 (Generic Access) is served by bluetoothd itself; remove this service",
                "services[0].characteristics[0].flags[0]: unknown flag \"notfy\" (did you mean \"notify\"?)",
                "services[0].characteristics[1].id: duplicate id \"a\" (first used at services[0].id)",
                "services[0].characteristics[1].value.uint8: 300 is out of range 0...255",
                "advertisements[0].discoverable: a broadcast advertisement cannot be discoverable",
            ])
        let unknownFlag = errors.issues[1]
        #expect(unknownFlag.line == 5 && unknownFlag.column == 34)
        #expect(errors.errors.count == 5)
    }

    @Test("JSON syntax errors come back as one positioned issue")
    func syntaxError() throws {
        let errors = try #require(load("{\"version\": 1,\n  \"services\": [}").failure)
        #expect(errors.issues == [ConfigurationIssue(path: "", message: "unexpected '}', expected a value", line: 2, column: 16)])
        #expect(errors.description == "line 2, column 16: unexpected '}', expected a value")
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
