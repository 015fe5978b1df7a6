// SPDX-License-Identifier: MIT
import BLEModel
import Control
import ControlAPI
import DBusKit
import DaemonCore
import TestSupport
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"))
struct ControlValueTests {
    @Test func listsEveryCharacteristicWithItsState() throws {
        let fixture = try ControlFixture()
        #expect(fixture.start() == .owned)
        guard case .success(let values)? = fixture.call("ListCharacteristics") else {
            Issue.record("ListCharacteristics failed")
            return
        }
        let items = values.first?.asArray ?? []
        #expect(items.count == 2)  // descriptors are not listed
        let hr = items[0]
        #expect(hr.variantDictionaryValue("Id")?.asString == "hr")
        #expect(hr.variantDictionaryValue("Service")?.asString == "heart-rate")
        #expect(hr.variantDictionaryValue("UUID")?.asString == "00002a37-0000-1000-8000-00805f9b34fb")
        #expect(hr.variantDictionaryValue("Flags")?.asStringArray == ["notify"])
        #expect(hr.variantDictionaryValue("Value")?.asBytes == [0, 72])
        #expect(hr.variantDictionaryValue("Notifying")?.asBool == false)
        #expect(hr.variantDictionaryValue("Persistent")?.asBool == false)
        #expect(items[1].variantDictionaryValue("Persistent")?.asBool == true)
        #expect(items[1].variantDictionaryValue("MaxLength")?.asUInt32 == 20)
    }

    @Test func setValueIsSavedBeforeTheReplyAndSignalled() throws {
        let fixture = try ControlFixture()
        fixture.start()
        let log = fixture.recordSignals()
        let reply = fixture.call("SetValue", [.string("label"), .bytes(Array("kitchen".utf8))])
        #expect(reply.map { (try? $0.get()) != nil } == true)
        // The reply came after the save that holds the new value.
        #expect(fixture.storage.saved.last?.characteristics["label"]?.value == Array("kitchen".utf8))
        guard case .success(let got)? = fixture.call("GetValue", [.string("label")]) else {
            Issue.record("GetValue failed")
            return
        }
        #expect(got.first?.asBytes == Array("kitchen".utf8))
        fixture.loop.run(until: { !log.signals.isEmpty }, timeout: .seconds(5))
        #expect(log.signals == [.init(member: "ValueChanged", id: "label", value: Array("kitchen".utf8), detail: "control")])
    }

    @Test("signals go out only between Subscribe() and Unsubscribe()")
    func signalsOnlyWhileSubscribed() throws {
        let fixture = try ControlFixture()
        fixture.start()
        let log = fixture.recordSignals()  // subscribes
        _ = fixture.call("Unsubscribe")
        // gattd sends a signal before the reply to the call that caused it, so once the
        // reply is here a signal would have arrived too.
        _ = fixture.call("SetValue", [.string("label"), .bytes(Array("quiet".utf8))])
        _ = fixture.call("GetStatus")
        #expect(log.signals.isEmpty, "signals sent after Unsubscribe: \(log.signals)")
        _ = fixture.call("Subscribe")
        _ = fixture.call("SetValue", [.string("label"), .bytes(Array("loud".utf8))])
        fixture.loop.run(until: { !log.signals.isEmpty }, timeout: .seconds(5))
        #expect(log.signals == [.init(member: "ValueChanged", id: "label", value: Array("loud".utf8), detail: "control")])
    }

    @Test func refusesUnknownIdsAndWrongLengthsWithoutChangingAnything() throws {
        let fixture = try ControlFixture()
        fixture.start()
        let unknown = fixture.call("SetValue", [.string("nope"), .bytes([1])])
        #expect(unknown.flatMap(error)?.name == "org.gattd.Error.UnknownCharacteristic")
        #expect(unknown.flatMap(error)?.message == "no characteristic has id \"nope\"")
        // A descriptor id is not a characteristic id.
        #expect(fixture.call("GetValue", [.string("hr-label")]).flatMap(error)?.name == ControlError.Name.unknownCharacteristic)
        let short = fixture.call("SetValue", [.string("hr"), .bytes([1])])
        #expect(short.flatMap(error)?.name == "org.gattd.Error.InvalidValueLength")
        #expect(short.flatMap(error)?.message == "hr takes 2...2 bytes, got 1")
        #expect(fixture.database["hr"]?.value == [0, 72])
        #expect(fixture.storage.saved.isEmpty)
    }

    @Test func aFailedSaveRefusesTheSetAndRestoresTheValue() throws {
        let fixture = try ControlFixture()
        fixture.start()
        fixture.storage.failure = StateStoreError(operation: "write", path: "/state.json", code: 28)
        let reply = fixture.call("SetValue", [.string("label"), .bytes([0x41])])
        #expect(reply.flatMap(error)?.name == "org.gattd.Error.NotSaved")
        #expect(fixture.database["label"]?.value == Array("hello".utf8))
        #expect(fixture.status("LastError")?.asString?.contains("No space left on device") == true)
    }

    @Test func everyCentralWriteIsSignalledEvenWhenUnchanged() throws {
        let fixture = try ControlFixture()
        fixture.start()
        let log = fixture.recordSignals()
        let label = try #require(fixture.database["label"])
        let device = "/org/bluez/hci0/dev_00_11_22_33_44_55"
        fixture.database.write(label, bytes: [0x68, 0x69], offset: 0, origin: .central(device: device))
        fixture.database.write(label, bytes: [0x68, 0x69], offset: 0, origin: .central(device: device))
        fixture.loop.run(until: { log.signals.count >= 3 }, timeout: .seconds(5))
        #expect(
            log.signals == [
                .init(member: "ValueChanged", id: "label", value: [0x68, 0x69], detail: "central"),
                .init(member: "ValueWritten", id: "label", value: [0x68, 0x69], detail: device),
                .init(member: "ValueWritten", id: "label", value: [0x68, 0x69], detail: device),
            ])
    }
}

/// The error of a failed call, nil for a reply.
func error(_ result: Result<[DBusValue], DBusError>) -> DBusError? {
    if case .failure(let error) = result { return error }
    return nil
}
