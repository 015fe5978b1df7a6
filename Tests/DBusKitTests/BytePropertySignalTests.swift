// SPDX-License-Identifier: MIT
import DBusKit
import Testing

/// `BytePropertySignal` patches copies of a prepared message: each must read back exactly
/// as the signal built from scratch would, and no copy may share bytes with another.
@Suite("Prepared PropertiesChanged signals")
struct BytePropertySignalTests {
    private let path: ObjectPath = "/org/gattd/app/svc/char"
    private let interface = "org.bluez.GattCharacteristic1"

    /// The signal as the general path builds it, for comparison.
    private func reference(_ bytes: [UInt8]) throws -> Message {
        try Message.signal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [
                .string(interface), .variantDictionary([("Value", .bytes(bytes))]), .array(elementSignature: "s", []),
            ])
    }

    private func expectSame(_ message: Message, _ bytes: [UInt8]) throws {
        let expected = try reference(bytes)
        #expect(message.type == .signal)
        #expect(message.path == path)
        #expect(message.interface == "org.freedesktop.DBus.Properties")
        #expect(message.member == "PropertiesChanged")
        #expect(message.signature == "sa{sv}as")
        #expect(message.serial == 0, "a copy gets its serial when it is sent")
        #expect(try message.arguments() == expected.arguments())
        #expect(try message.variantDictionary(at: 1).first?.1 == .bytes(bytes))
    }

    @Test("copies carry their own bytes and read back like a signal built from scratch")
    func copiesAreIndependent() throws {
        let signal = try BytePropertySignal(path: path, interface: interface, property: "Value")
        let first = signal.message(carrying: [1, 2, 3, 4])
        let second = signal.message(carrying: [5, 6, 7, 8])
        let third = signal.message(carrying: [0xff, 0, 0xff, 0])
        #expect(signal.templatesBuilt == 1, "same length: one template")
        try expectSame(first, [1, 2, 3, 4])
        try expectSame(second, [5, 6, 7, 8])
        try expectSame(third, [0xff, 0, 0xff, 0])
    }

    @Test("a value of another length (also empty, also long) builds a new template")
    func lengthChanges() throws {
        let signal = try BytePropertySignal(path: path, interface: interface, property: "Value")
        let long = [UInt8]((0..<512).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try expectSame(signal.message(carrying: [9]), [9])
        try expectSame(signal.message(carrying: []), [])
        try expectSame(signal.message(carrying: long), long)
        try expectSame(signal.message(carrying: long.reversed()), long.reversed())
        try expectSame(signal.message(carrying: [7]), [7])
        #expect(signal.templatesBuilt == 4)
    }

    @Test("names are checked once, when the signal is prepared")
    func invalidNames() {
        #expect(throws: DBusError.self) { try BytePropertySignal(path: path, interface: "no dots", property: "Value") }
    }
}
