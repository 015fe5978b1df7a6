// SPDX-License-Identifier: MIT

import DBusKit
import Testing

@testable import BlueZ

/// The option rules of docs/bluez-contract.md §2 as `GattRequestOptions` applies them, whichever
/// decoder produced the pairs.
@Suite("GattRequestOptions")
struct GattRequestOptionsTests {
    @Test("bluetoothd's keys are read with their types; absent ones keep their defaults")
    func bluetoothdKeys() throws {
        let options = try GattRequestOptions(
            entries: [
                ("device", .objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55")), ("link", .string("LE")),
                ("mtu", .uint16(517)), ("offset", .uint16(22)), ("prepare-authorize", .bool(true)),
                ("type", .string("request")),
            ], method: "WriteValue")
        #expect(options.device == "/org/bluez/hci0/dev_00_11_22_33_44_55")
        #expect(options.link == "LE" && options.mtu == 517 && options.offset == 22 && options.prepareAuthorize)
        let empty = try GattRequestOptions(entries: [], method: "ReadValue")
        #expect(empty == GattRequestOptions())
        #expect(empty.offset == 0 && empty.device == nil && !empty.prepareAuthorize)
    }

    @Test("an unknown key or a known key of the wrong type is InvalidArguments naming it")
    func refusals() {
        let cases: [((String, DBusValue), String)] = [
            (("color", .string("red")), "unknown option \"color\""),
            (("offset", .uint32(1)), "option \"offset\" must be of type q"),
            (("device", .string("/org/bluez/hci0/dev_1")), "option \"device\" must be of type o"),
            (("prepare-authorize", .byte(1)), "option \"prepare-authorize\" must be of type b"),
        ]
        for (entry, text) in cases {
            do {
                _ = try GattRequestOptions(entries: [entry], method: "ReadValue")
                Issue.record("accepted \(entry)")
            } catch {
                #expect(error.name == "org.bluez.Error.InvalidArguments")
                #expect(error.message == "ReadValue: \(text)")
            }
        }
    }
}

/// The in-place reading of the ReadValue/WriteValue options (`init(_:argument:method:previousDevice:)`)
/// accepts and refuses exactly what the pairs-based path does, with the same values and errors.
@Suite("GattRequestOptions read in place")
struct GattRequestOptionsInPlaceTests {
    private func outcome(_ body: () throws(DBusError) -> GattRequestOptions) -> Result<GattRequestOptions, DBusError> {
        do throws(DBusError) { return .success(try body()) } catch { return .failure(error) }
    }

    @Test("same options or same error as the pairs-based path, for each kind of options argument")
    func sameAsPairs() throws {
        let device: DBusValue = .objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55")
        let cases: [[(String, DBusValue)]] = [
            [],
            [("device", device), ("link", .string("LE")), ("mtu", .uint16(517))],
            [("device", device), ("link", .string("LE")), ("mtu", .uint16(517)), ("offset", .uint16(22))],
            [("offset", .uint16(3)), ("offset", .uint16(5)), ("prepare-authorize", .bool(true)), ("type", .string("request"))],
            [("device", .variant(device)), ("mtu", .variant(.uint16(23))), ("link", .variant(.string("BR/EDR")))],
            [("offset", .uint32(1))],
            [("device", .string("/org/bluez/hci0/dev_1"))],
            [("mtu", .string("517"))],
            [("link", .objectPath("/x"))],
            [("color", .string("red"))],
            [("device", device), ("prepare-authorize", .byte(1))],
        ]
        for entries in cases {
            let message = try Message.methodCall(
                destination: "org.example.Peer", path: "/org/example", interface: "org.bluez.GattCharacteristic1",
                member: "WriteValue", arguments: [.bytes([1]), .variantDictionary(entries)])
            let pairs = outcome { () throws(DBusError) in try GattRequestOptions(entries: entries, method: "WriteValue") }
            for previous in [nil, "/org/bluez/hci0/dev_00_11_22_33_44_55", "/other"] as [String?] {
                let inPlace = outcome { () throws(DBusError) in
                    try GattRequestOptions(
                        message, argument: 1, method: "WriteValue", previousDevice: previous,
                        previousLink: previous == nil ? nil : "LE")
                }
                #expect(inPlace == pairs, "\(entries) with previous device \(previous ?? "none")")
            }
            // ReadValue: the options are the first argument.
            let read = try Message.methodCall(
                destination: "org.example.Peer", path: "/org/example", interface: "org.bluez.GattCharacteristic1",
                member: "ReadValue", arguments: [.variantDictionary(entries)])
            let readPairs = outcome { () throws(DBusError) in try GattRequestOptions(entries: entries, method: "ReadValue") }
            let readInPlace = outcome { () throws(DBusError) in
                try GattRequestOptions(read, argument: 0, method: "ReadValue", previousDevice: nil, previousLink: "BR/EDR")
            }
            #expect(readInPlace == readPairs, "ReadValue \(entries)")
        }
    }
}
