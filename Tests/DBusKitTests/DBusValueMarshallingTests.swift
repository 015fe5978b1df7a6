// SPDX-License-Identifier: MIT
import DBusKit
import Glibc
import Testing

@Suite("DBusValue marshalling through a real DBusMessage")
struct DBusValueMarshallingTests {
    private func roundTrip(_ values: [DBusValue]) throws -> [DBusValue] {
        let message = try Message.methodCall(
            destination: "org.example.Peer", path: "/org/example", interface: "org.example.Test", member: "Echo",
            arguments: values)
        return try message.arguments()
    }

    @Test("every basic type survives a round trip and has its D-Bus signature")
    func basicTypes() throws {
        let values: [DBusValue] = [
            .byte(0xFE), .bool(true), .bool(false), .int16(-12345), .uint16(65535), .int32(Int32.min),
            .uint32(UInt32.max), .int64(Int64.min), .uint64(UInt64.max), .double(-1.5), .string("héllo ✓"),
            .objectPath("/org/bluez/hci0"), .signature("a{sv}"),
        ]
        #expect(try roundTrip(values) == values)
        #expect(values.map(\.signature).joined() == "ybbnqiuxtdsog")
    }

    @Test("ay uses the bytes case both ways, including empty and large arrays")
    func byteArrays() throws {
        let large = (0..<4096).map { UInt8(truncatingIfNeeded: $0) }
        let values: [DBusValue] = [.bytes([]), .bytes([1, 2, 3]), .bytes(large)]
        #expect(try roundTrip(values) == values)
        #expect(try roundTrip([.array(elementSignature: "y", [.byte(9), .byte(8)])]) == [.bytes([9, 8])])
    }

    @Test("containers: as, ao, structures, variants, nested a{sv}, a{qv}, a{sv} keyed by UUID")
    func containers() throws {
        let uuidKeyed = DBusValue.variantDictionary([
            ("0000180d-0000-1000-8000-00805f9b34fb", .bytes([0x06, 0x00])),
            ("6e400001-b5a3-f393-e0a9-e50e24dcca9e", .string("nus")),
        ])
        let manufacturer = DBusValue.dictionary(
            keySignature: "q", valueSignature: "v",
            [DBusDictionaryEntry(key: .uint16(0xFFFF), value: .variant(.bytes([0xCA, 0xFE])))])
        let nested = DBusValue.variantDictionary([
            ("Type", .string("peripheral")),
            ("ServiceData", uuidKeyed),
            ("ManufacturerData", manufacturer),
            ("Includes", .objectPathArray(["/app/service0", "/app/service1"])),
            ("Flags", .stringArray(["read", "notify"])),
            ("Pair", .structure([.int32(1), .string("x"), .variant(.variant(.bool(true)))])),
        ])
        let values: [DBusValue] = [nested, manufacturer, uuidKeyed, .objectPathArray([]), .stringArray(["a", ""])]
        let decoded = try roundTrip(values)
        #expect(decoded == values)
        #expect(nested.signature == "a{sv}")
        #expect(manufacturer.signature == "a{qv}")
        #expect(decoded[0].variantDictionaryValue("Includes")?.asObjectPathArray == ["/app/service0", "/app/service1"])
        #expect(decoded[0].variantDictionaryValue("ServiceData")?.variantDictionaryValue(
            "0000180d-0000-1000-8000-00805f9b34fb")?.asBytes == [0x06, 0x00])
    }

    @Test("h: libdbus duplicates an appended fd; the decoded fd is a new descriptor for the same file")
    func unixFD() throws {
        let fd = open("/dev/null", O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        let decoded = try roundTrip([.unixFD(fd)])
        guard case .unixFD(let received)? = decoded.first else {
            Issue.record("expected a unix fd, got \(decoded)")
            return
        }
        defer { close(received) }
        #expect(received != fd)
        var original = stat()
        var copy = stat()
        #expect(fstat(fd, &original) == 0 && fstat(received, &copy) == 0)
        #expect(original.st_ino == copy.st_ino && original.st_dev == copy.st_dev)
        #expect(DBusValue.unixFD(fd).signature == "h")
    }

    @Test("invalid input throws InvalidArgs instead of reaching a libdbus assertion")
    func invalidInputRejected() throws {
        for text in ["relative/path", "/double//slash", "/trailing/", "/bad-char", ""] {
            #expect(throws: DBusError.self) { try ObjectPath(text) }
        }
        let invalid: [[DBusValue]] = [
            [.string("nul\u{0}inside")],
            [.signature("a")],
            [.signature("(i")],
            [.array(elementSignature: "s", [.string("ok"), .int32(1)])],
            [.dictionary(keySignature: "v", valueSignature: "s", [])],
            [.dictionary(keySignature: "s", valueSignature: "v", [DBusDictionaryEntry(key: .string("k"), value: .int32(1))])],
            [.structure([])],
            [.unixFD(-1)],
            [.variantDictionary([("bad\u{0}key", .bool(true))])],
        ]
        for values in invalid {
            do {
                _ = try roundTrip(values)
                Issue.record("accepted invalid \(values)")
            } catch {
                #expect((error as? DBusError)?.name == DBusError.Name.invalidArgs)
            }
        }
        #expect(throws: DBusError.self) {
            try Message.methodCall(destination: "not a bus name", path: "/", interface: nil, member: "M")
        }
        #expect(throws: DBusError.self) {
            try Message.signal(path: "/", interface: "no-dots", member: "M")
        }
        #expect(throws: DBusError.self) {
            try Message.methodCall(destination: nil, path: "/", interface: "org.example.I", member: "Bad.Member")
        }
    }
}
