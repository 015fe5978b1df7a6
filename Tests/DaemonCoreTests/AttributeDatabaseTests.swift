// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Testing

private let definition = """
    {"version": 1, "security": {"pairing": "display-passkey"}, "services": [
      {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
        {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write", "notify"],
         "value": {"utf8": "hello"}, "minLength": 1, "maxLength": 20,
         "descriptors": [{"id": "label-desc", "uuid": "2901", "flags": ["read"], "value": {"utf8": "Label"}}]},
        {"id": "fixed", "uuid": "2A19", "flags": ["read"], "value": {"uint8": 100}},
        {"id": "sink", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["write"]},
        {"id": "secure", "uuid": "12345678-1234-5678-1234-56789abcdef3", "flags": ["encrypt-read", "secure-write"],
         "value": {"hex": "0102"}}
      ]}]}
    """

private func makeDatabase() throws -> AttributeDatabase {
    let loaded = try ConfigurationLoader.parse(Array(definition.utf8)).get()
    return AttributeDatabase(configuration: loaded.configuration)
}

@Suite("Attribute database: the ATT rules bluetoothd leaves to gattd")
struct AttributeDatabaseTests {
    @Test("a read returns the value from the offset; offset == length gives an empty value")
    func readOffsets() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        #expect(Array(try database.read(label, offset: 0).get()) == Array("hello".utf8))
        #expect(Array(try database.read(label, offset: 2).get()) == Array("llo".utf8))
        #expect(try database.read(label, offset: 5).get().isEmpty)
    }

    @Test("a read beyond the end is invalidOffset, whatever the offset")
    func readBeyondEnd() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        #expect(database.read(label, offset: 6).failure == .invalidOffset)
        #expect(database.read(label, offset: 65535).failure == .invalidOffset)
    }

    @Test("reading a write-only characteristic is readNotPermitted")
    func readWriteOnly() throws {
        let database = try makeDatabase()
        #expect(database.read(try #require(database["sink"]), offset: 0).failure == .readNotPermitted)
    }

    @Test("security variants of read and write count as read and write")
    func securityFlags() throws {
        let database = try makeDatabase()
        let secure = try #require(database["secure"])
        #expect(Array(try database.read(secure, offset: 0).get()) == [1, 2])
        #expect(database.write(secure, bytes: [9], offset: 0).failure == nil)
    }

    @Test("writing a read-only characteristic is writeNotPermitted and keeps the value")
    func writeReadOnly() throws {
        let database = try makeDatabase()
        let fixed = try #require(database["fixed"])
        #expect(database.write(fixed, bytes: [1], offset: 0).failure == .writeNotPermitted)
        #expect(fixed.value == [100])
    }

    @Test("a write replaces the value; a write at an offset keeps the bytes before it")
    func writeOffsets() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        #expect(database.write(label, bytes: Array("hi".utf8), offset: 0).failure == nil)
        #expect(label.value == Array("hi".utf8))
        #expect(database.write(label, bytes: Array(" there".utf8), offset: 2).failure == nil)
        #expect(label.value == Array("hi there".utf8))
        #expect(label.hasBeenWritten)
    }

    @Test("a write beyond the end of the value is invalidOffset")
    func writeOffsetBeyondEnd() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        #expect(database.write(label, bytes: [1], offset: 6).failure == .invalidOffset)
        #expect(label.value == Array("hello".utf8))
    }

    @Test("writes outside minLength...maxLength are invalidAttributeValueLength and keep the value")
    func writeLengthBounds() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        #expect(database.write(label, bytes: [], offset: 0).failure == .invalidAttributeValueLength)
        #expect(database.write(label, bytes: Array(repeating: 0x41, count: 21), offset: 0).failure == .invalidAttributeValueLength)
        #expect(database.write(label, bytes: Array(repeating: 0x41, count: 16), offset: 5).failure == .invalidAttributeValueLength)
        #expect(database.write(label, bytes: Array(repeating: 0x41, count: 100_000), offset: 0).failure == .invalidAttributeValueLength)
        #expect(label.value == Array("hello".utf8))
        #expect(database.write(label, bytes: Array(repeating: 0x41, count: 20), offset: 0).failure == nil)
    }

    @Test("observers see changed values, not unchanged rewrites")
    func observers() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        var seen: [[UInt8]] = []
        database.observeChanges { attribute, _ in seen.append(attribute.value) }
        database.write(label, bytes: Array("a".utf8), offset: 0)
        database.write(label, bytes: Array("a".utf8), offset: 0)
        database.set(label, to: Array("b".utf8), origin: .control)
        #expect(seen == [Array("a".utf8), Array("b".utf8)])
    }

    @Test("only characteristics with notify or indicate accept StartNotify")
    func notifying() throws {
        let database = try makeDatabase()
        let label = try #require(database["label"])
        let fixed = try #require(database["fixed"])
        #expect(database.setNotifying(label, true))
        #expect(label.isNotifying)
        #expect(!database.setNotifying(fixed, true))
        #expect(!fixed.isNotifying)
        #expect(database.subscribedCount == 1)
        database.setNotifying(label, false)
        #expect(database.subscribedCount == 0)
    }

    @Test("descriptors are attributes of their own with their own flags")
    func descriptors() throws {
        let database = try makeDatabase()
        let descriptor = try #require(database["label-desc"])
        #expect(descriptor.kind == .descriptor(characteristicID: "label"))
        #expect(Array(try database.read(descriptor, offset: 0).get()) == Array("Label".utf8))
        #expect(database.write(descriptor, bytes: [1], offset: 0).failure == .writeNotPermitted)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
