// SPDX-License-Identifier: MIT
import BlueZ
import DBusKit
import DaemonCore
import TestSupport
import Testing

private let characteristic = "org.bluez.GattCharacteristic1"
private let descriptor = "org.bluez.GattDescriptor1"
private let levelUUID = "00002a19-0000-1000-8000-00805f9b34fb"
private let labelUUID = "12345678-1234-5678-1234-56789abcdef1"
private let secretUUID = "12345678-1234-5678-1234-56789abcdef2"
private let alarmUUID = "12345678-1234-5678-1234-56789abcdef3"
private let labelNameUUID = "00002901-0000-1000-8000-00805f9b34fb"
private let device = "/org/bluez/hci0/dev_00_11_22_33_44_66"

/// gattd registered with a stand-in bluetoothd; calls come from its connection (trusted)
/// or from a stranger's, to the paths bluetoothd read from the tree.
private struct Session {
    let f: BlueZFixture
    let bluez: FakeBlueZ
    let stranger: BusConnection
    let tree: [FakeBlueZ.TreeObject]

    init() throws {
        f = try BlueZFixture()
        bluez = try f.startBlueZ()
        guard f.startRegistered() else { throw BlueZFixture.FixtureError(description: "not registered") }
        stranger = try f.stranger()
        tree = try #require(bluez.adapters["hci0"]?.application)
    }

    func path(_ uuid: String, _ interface: String = characteristic) throws -> ObjectPath {
        objectPath(try #require(tree.object(interface, uuid: uuid)).path)
    }

    func send(
        _ uuid: String, _ member: String, _ arguments: [DBusValue] = [], from caller: BusConnection? = nil,
        interface: String = characteristic
    ) throws -> Result<Message, DBusError> {
        try #require(
            call(f, caller ?? bluez.connection, path(uuid, interface), member, arguments, interface: interface))
    }

    func read(_ uuid: String, _ options: [(String, DBusValue)] = [], interface: String = characteristic) throws
        -> Result<[UInt8], DBusError>
    {
        try send(uuid, "ReadValue", [.variantDictionary(options)], interface: interface).map {
            (try? $0.arguments())?.first?.asBytes ?? []
        }
    }

    func write(
        _ uuid: String, _ bytes: [UInt8], _ options: [(String, DBusValue)] = [], from caller: BusConnection? = nil
    )
        throws -> Result<Message, DBusError>
    {
        try send(uuid, "WriteValue", [.bytes(bytes), .variantDictionary(options)], from: caller)
    }

    /// Sends `member` flagged NO_REPLY_EXPECTED from bluetoothd, then a `ReadValue` of
    /// `uuid`: replies come back in order, so once the read's is in, a reply to the first
    /// would have been seen (`strays`).
    func sendWithoutReply(_ uuid: String, _ member: String, _ arguments: [DBusValue]) throws -> (
        strays: [Message], read: Result<[UInt8], DBusError>
    ) {
        var strays: [Message] = []
        bluez.connection.onStrayReply = { strays.append($0) }
        defer { bluez.connection.onStrayReply = nil }
        let message = try Message.methodCall(
            destination: f.connection.uniqueName, path: path(uuid), interface: characteristic, member: member,
            arguments: arguments)
        message.noReplyExpected = true
        try bluez.connection.send(message)
        let read = try read(uuid)
        f.settle(bluez.connection)
        return (strays, read)
    }
}

private func bluezError(_ result: Result<Message, DBusError>) -> String? { errorName(result) }

private func bluezError(_ result: Result<[UInt8], DBusError>) -> DBusError? {
    if case .failure(let error) = result { return error }
    return nil
}

@Suite("GATT requests from bluetoothd on a private bus", .serialized, .enabled(if: PrivateBus.isAvailable))
struct GattRequestHandlerTests {
    @Test("ReadValue answers the bytes from the offset; past the end is InvalidOffset; mtu and device are used")
    func readWithOffset() throws {
        let s = try Session()
        #expect(try s.read(labelUUID).get() == Array("hello".utf8))
        let options: [(String, DBusValue)] = [
            ("device", .objectPath(objectPath(device))), ("mtu", .uint16(185)), ("offset", .uint16(2)),
            ("link", .string("LE"))
        ]
        #expect(try s.read(labelUUID, options).get() == Array("llo".utf8))
        #expect(s.f.service.mtu.mtu(for: device) == 185)
        #expect(try s.read(labelUUID, [("offset", .uint16(5))]).get() == [])
        #expect(bluezError(try s.read(labelUUID, [("offset", .uint16(6))]))?.name == "org.bluez.Error.InvalidOffset")
        #expect(try s.read(labelNameUUID, interface: descriptor).get() == Array("Label".utf8))
    }

    @Test("ReadValue of a characteristic without read is NotPermitted")
    func readNotPermitted() throws {
        let s = try Session()
        let error = try #require(bluezError(try s.read(secretUUID)))
        #expect(error.name == "org.bluez.Error.NotPermitted")
        #expect(error.message == "Read not permitted")
    }

    @Test("WriteValue stores at the offset; bad offsets, lengths and permissions get their ATT error names")
    func writes() throws {
        let s = try Session()
        let label = try #require(s.f.attribute("label"))
        _ = try s.write(
            labelUUID, Array("abc".utf8), [("device", .objectPath(objectPath(device))), ("mtu", .uint16(64))]
        ).get()
        #expect(label.value == Array("abc".utf8))
        #expect(s.f.service.mtu.mtu(for: device) == 64)
        _ = try s.write(labelUUID, Array("de".utf8), [("offset", .uint16(3))]).get()
        #expect(label.value == Array("abcde".utf8))
        #expect(bluezError(try s.write(labelUUID, [0x21], [("offset", .uint16(6))])) == "org.bluez.Error.InvalidOffset")
        #expect(bluezError(try s.write(labelUUID, Array("too long!".utf8))) == "org.bluez.Error.InvalidValueLength")
        #expect(bluezError(try s.write(labelUUID, [])) == "org.bluez.Error.InvalidValueLength")
        #expect(label.value == Array("abcde".utf8))
        #expect(bluezError(try s.write(levelUUID, [1])) == "org.bluez.Error.NotPermitted")
        #expect(s.f.attribute("level")?.value == [87])
        _ = try s.write(secretUUID, [9, 9]).get()
        #expect(s.f.attribute("secret")?.value == [9, 9])
    }

    @Test("a prepare-authorize write is accepted without storing anything")
    func prepareAuthorize() throws {
        let s = try Session()
        _ = try s.write(labelUUID, Array("xyz".utf8), [("prepare-authorize", .bool(true))]).get()
        #expect(s.f.attribute("label")?.value == Array("hello".utf8))
    }

    @Test("a caller that is not the org.bluez owner gets NotAuthorized and changes nothing")
    func strangerRefused() throws {
        let s = try Session()
        let label = try #require(s.f.attribute("label"))
        #expect(
            bluezError(try s.send(labelUUID, "ReadValue", [.variantDictionary([])], from: s.stranger))
                == "org.bluez.Error.NotAuthorized")
        #expect(bluezError(try s.write(labelUUID, [0x41], from: s.stranger)) == "org.bluez.Error.NotAuthorized")
        #expect(label.value == Array("hello".utf8))
        #expect(bluezError(try s.send(levelUUID, "StartNotify", from: s.stranger)) == "org.bluez.Error.NotAuthorized")
        #expect(s.f.attribute("level")?.isNotifying == false)
        #expect(bluezError(try s.send(alarmUUID, "Confirm", from: s.stranger)) == "org.bluez.Error.NotAuthorized")
        #expect(s.f.attribute("alarm")?.confirmations == 0)
        #expect(
            bluezError(
                try s.send(
                    labelNameUUID, "ReadValue", [.variantDictionary([])], from: s.stranger, interface: descriptor))
                == "org.bluez.Error.NotAuthorized")
    }

    @Test("Value is readable as a property by bluetoothd only")
    func valuePropertyOnlyForBlueZ() throws {
        let s = try Session()
        func value(from caller: BusConnection) throws -> DBusValue? {
            let result = try #require(
                call(
                    s.f, caller, s.path(labelUUID), "GetAll", [.string(characteristic)],
                    interface: "org.freedesktop.DBus.Properties"))
            return try result.get().arguments().first?.variantDictionaryValue("Value")
        }
        #expect(try value(from: s.bluez.connection)?.asBytes == Array("hello".utf8))
        #expect(try value(from: s.stranger) == nil)
        let uuid = try #require(
            call(
                s.f, s.stranger, s.path(labelUUID), "GetAll", [.string(characteristic)],
                interface: "org.freedesktop.DBus.Properties"))
        #expect(try uuid.get().arguments().first?.variantDictionaryValue("UUID") == .string(labelUUID))
    }

    @Test("malformed options are refused with InvalidArguments naming the option; nothing is written")
    func malformedOptions() throws {
        let s = try Session()
        let unknown = try #require(bluezError(try s.read(labelUUID, [("bogus", .uint16(1))])))
        #expect(unknown.name == "org.bluez.Error.InvalidArguments")
        #expect(unknown.message.contains("bogus"))
        let offset = try #require(bluezError(try s.read(labelUUID, [("offset", .string("2"))])))
        #expect(offset.name == "org.bluez.Error.InvalidArguments")
        #expect(offset.message.contains("offset"))
        let write = try s.write(labelUUID, [0x41], [("device", .string("not a path"))])
        #expect(bluezError(write) == "org.bluez.Error.InvalidArguments")
        #expect(s.f.attribute("label")?.value == Array("hello".utf8))
        let mtu = try s.write(labelUUID, [0x41], [("mtu", .uint32(23))])
        #expect(bluezError(mtu) == "org.bluez.Error.InvalidArguments")
        #expect(s.f.attribute("label")?.value == Array("hello".utf8))
    }

    @Test("a NO_REPLY_EXPECTED write (Write Command) is stored and never answered, even when refused")
    func noReplyWrite() throws {
        let s = try Session()
        let stored = try s.sendWithoutReply(
            labelUUID, "WriteValue", [.bytes(Array("quiet".utf8)), .variantDictionary([])])
        #expect(stored.strays.isEmpty)
        #expect(try stored.read.get() == Array("quiet".utf8))
        let refused = try s.sendWithoutReply(
            labelUUID, "WriteValue", [.bytes(Array("much too long".utf8)), .variantDictionary([])])
        #expect(refused.strays.isEmpty)
        #expect(try refused.read.get() == Array("quiet".utf8))
    }

    @Test("StartNotify subscribes: new values go to bluetoothd as PropertiesChanged(Value); StopNotify ends it")
    func notifications() throws {
        let s = try Session()
        let level = try #require(s.f.attribute("level"))
        var values: [[UInt8]] = []
        let subscription = s.bluez.connection.subscribe(
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", arg0: characteristic
        ) { message in
            guard let arguments = try? message.arguments(), arguments.count == 3,
                let value = arguments[1].variantDictionaryValue("Value")?.asBytes
            else { return }
            values.append(value)
        }
        defer { subscription.cancel() }
        _ = try s.send(levelUUID, "StartNotify").get()
        #expect(level.isNotifying)
        let notifying = try #require(
            call(
                s.f, s.bluez.connection, s.path(levelUUID), "Get", [.string(characteristic), .string("Notifying")],
                interface: "org.freedesktop.DBus.Properties"))
        #expect(try notifying.get().arguments() == [.variant(.bool(true))])
        var done = false
        s.f.service.set(level, to: [42]) { _ in done = true }
        #expect(s.f.run { done && values == [[42]] })

        _ = try s.send(levelUUID, "StopNotify").get()
        #expect(!level.isNotifying)
        s.f.service.set(level, to: [43]) { _ in }
        s.f.settle(s.bluez.connection)
        #expect(values == [[42]])
    }

    @Test("StartNotify on a characteristic that cannot notify is NotSupported")
    func startNotifyNotSupported() throws {
        let s = try Session()
        #expect(bluezError(try s.send(labelUUID, "StartNotify")) == "org.bluez.Error.NotSupported")
        #expect(s.f.attribute("label")?.isNotifying == false)
    }

    @Test("Confirm from bluetoothd is counted, answered or not as the caller asked")
    func confirm() throws {
        let s = try Session()
        _ = try s.send(alarmUUID, "StartNotify").get()
        _ = try s.send(alarmUUID, "Confirm").get()
        #expect(s.f.attribute("alarm")?.confirmations == 1)
        let quiet = try s.sendWithoutReply(alarmUUID, "Confirm", [])
        #expect(quiet.strays.isEmpty)
        #expect(s.f.attribute("alarm")?.confirmations == 2)
    }

    @Test("StartNotify and StopNotify flagged NO_REPLY_EXPECTED take effect without a reply")
    func noReplyNotify() throws {
        let s = try Session()
        let start = try s.sendWithoutReply(levelUUID, "StartNotify", [])
        #expect(start.strays.isEmpty)
        #expect(s.f.attribute("level")?.isNotifying == true)
        let stop = try s.sendWithoutReply(levelUUID, "StopNotify", [])
        #expect(stop.strays.isEmpty)
        #expect(s.f.attribute("level")?.isNotifying == false)
    }
}
