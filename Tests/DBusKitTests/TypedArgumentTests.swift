// SPDX-License-Identifier: MIT
import DBusKit
import Testing

/// `Message.variantDictionary(at:)` and `Message.bytes(at:)`: the hot-path decoders must
/// give what the generic decoder gives, and refuse what it would not call an a{sv} / ay.
@Suite("Typed argument access")
struct TypedArgumentTests {
    private func message(_ values: [DBusValue]) throws -> Message {
        try Message.methodCall(
            destination: "org.example.Peer", path: "/org/example", interface: "org.example.Test", member: "Call",
            arguments: values)
    }

    /// The generic decoder's view of argument `index` as (key, variant content) pairs.
    private func generic(_ message: Message, _ index: Int) throws -> [(String, DBusValue)]? {
        try message.arguments()[index].variantDictionaryEntries
    }

    private func same(_ a: [(String, DBusValue)], _ b: [(String, DBusValue)]?) -> Bool {
        guard let b, a.count == b.count else { return false }
        return zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    @Test("bluetoothd's ReadValue options decode to the same pairs as the generic path, in wire order")
    func bluetoothdOptions() throws {
        let options = DBusValue.variantDictionary([
            ("device", .objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55")),
            ("link", .string("LE")), ("mtu", .uint16(517)), ("offset", .uint16(22)),
        ])
        let call = try message([options])
        let fast = try call.variantDictionary(at: 0)
        #expect(fast.map(\.0) == ["device", "link", "mtu", "offset"])
        #expect(fast.first?.1.asObjectPath == "/org/bluez/hci0/dev_00_11_22_33_44_55")
        #expect(fast.last?.1 == .uint16(22))
        #expect(same(fast, try generic(call, 0)))
    }

    @Test("every basic type and container inside the variants matches the generic decoder")
    func everyKindOfContent() throws {
        let options = DBusValue.variantDictionary([
            ("y", .byte(7)), ("b", .bool(true)), ("n", .int16(-2)), ("q", .uint16(2)), ("i", .int32(-3)),
            ("u", .uint32(3)), ("x", .int64(-4)), ("t", .uint64(4)), ("d", .double(0.5)), ("s", .string("héllo")),
            ("o", .objectPath("/a/b")), ("g", .signature("a{sv}")), ("ay", .bytes([1, 2, 3])),
            ("as", .stringArray(["x", "y"])), ("nested", .variantDictionary([("inner", .int32(1))])),
            ("struct", .structure([.int32(1), .string("z")])), ("variant", .variant(.bool(false))),
        ])
        let call = try message([.string("first"), .bytes([9]), options])
        let fast = try call.variantDictionary(at: 2)
        #expect(fast.count == 17)
        #expect(fast.first { $0.0 == "variant" }?.1 == .variant(.bool(false)))
        #expect(same(fast, try generic(call, 2)))
    }

    @Test("an empty a{sv} decodes to no pairs; an empty a{ss} is refused")
    func emptyDictionaries() throws {
        #expect(try message([.variantDictionary([])]).variantDictionary(at: 0).isEmpty)
        let emptyStringMap = DBusValue.dictionary(keySignature: "s", valueSignature: "s", [])
        #expect(throws: DBusError.invalidArgs("argument is not of type a{sv}")) {
            try message([emptyStringMap]).variantDictionary(at: 0)
        }
    }

    @Test("wrong types and missing arguments throw InvalidArgs")
    func refusals() throws {
        let stringMap = DBusValue.dictionary(
            keySignature: "s", valueSignature: "s", [DBusDictionaryEntry(key: .string("k"), value: .string("v"))])
        let call = try message([.string("x"), stringMap, .bytes([1, 2])])
        for index in [0, 1, 2, 3, -1] {
            #expect(throws: DBusError.self) { try call.variantDictionary(at: index) }
        }
        for index in [0, 1, 3] {
            #expect(throws: DBusError.self) { try call.bytes(at: index) }
        }
        #expect(throws: DBusError.self) { try message([]).bytes(at: 0) }
    }

    @Test("forEachVariantDictionaryEntry walks the pairs in order and stops at the first error thrown")
    func walkingStopsOnError() throws {
        let options = DBusValue.variantDictionary([("a", .int32(1)), ("b", .string("x")), ("c", .bool(true))])
        let call = try message([options])
        var keys: [String] = []
        try call.forEachVariantDictionaryEntry(at: 0) { key, _ in keys.append(key) }
        #expect(keys == ["a", "b", "c"])
        keys = []
        let stop = DBusError(name: "org.example.Error.Stop", message: "at b")
        #expect(throws: stop) {
            try call.forEachVariantDictionaryEntry(at: 0) { key, value throws(DBusError) in
                keys.append(key)
                if value == .string("x") { throw stop }
            }
        }
        #expect(keys == ["a", "b"])
        var touched = false
        #expect(throws: DBusError.self) {
            try message([.bytes([1])]).forEachVariantDictionaryEntry(at: 0) { _, _ in touched = true }
        }
        #expect(!touched)
    }

    @Test("bytes(at:) returns the ay argument, empty or large")
    func byteArguments() throws {
        let large = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let call = try message([.bytes([]), .variantDictionary([]), .bytes(large)])
        #expect(try call.bytes(at: 0) == [])
        #expect(try call.bytes(at: 2) == large)
    }
}

/// `Message.forEachWireVariantEntry(at:_:)`: the same entries and values as the iterator's
/// typed readers when every variant holds an `s`, `o`, `q` or `b`; false (the caller's cue to
/// take the iterator path) for any other content, argument layout or a refused entry.
@Suite("Variant entries read from the wire bytes")
struct WireVariantEntryTests {
    private func message(_ values: [DBusValue]) throws -> Message {
        try Message.methodCall(
            destination: "org.example.Peer", path: "/org/example", interface: "org.example.Test", member: "Call",
            arguments: values)
    }

    private func wireEntries(_ call: Message, at index: Int) -> [String]? {
        var seen: [String] = []
        let done = call.forEachWireVariantEntry(at: index) { entry in
            for key in ["device", "link", "mtu", "flag", "empty", "offset"] as [StaticString] where entry.keyIs(key) {
                seen.append("\(key)")
            }
            if let value = entry.uint16 { seen.append("q \(value)") }
            if let value = entry.bool { seen.append("b \(value)") }
            if let value = entry.string() { seen.append("s \(value)") }
            if let value = entry.objectPath() { seen.append("o \(value)") }
            return true
        }
        return done ? seen : nil
    }

    @Test("basic contents after an ay and as the first argument, any padding")
    func basicContents() throws {
        let entries: [(String, DBusValue)] = [
            ("device", .objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55")), ("link", .string("LE")),
            ("mtu", .uint16(517)), ("flag", .bool(true)), ("empty", .string("")), ("offset", .uint16(0xfffe)),
            ("x", .bool(false)),
        ]
        let expected = [
            "device", "o /org/bluez/hci0/dev_00_11_22_33_44_55", "link", "s LE", "mtu", "q 517", "flag", "b true",
            "empty", "s ", "offset", "q 65534", "b false",
        ]
        #expect(wireEntries(try message([.variantDictionary(entries)]), at: 0) == expected)
        for count in 0..<9 {
            let call = try message([.bytes(Array(repeating: 7, count: count)), .variantDictionary(entries)])
            #expect(wireEntries(call, at: 1) == expected, "after \(count) bytes")
        }
        #expect(wireEntries(try message([.variantDictionary([])]), at: 0) == [])
    }

    @Test("other contents, layouts or a refused entry: false")
    func refusals() throws {
        for content in [DBusValue.uint32(1), .variant(.uint16(4)), .byte(1), .int16(2), .array(elementSignature: "s", [])] {
            let call = try message([.variantDictionary([("mtu", .uint16(23)), ("k", content)])])
            #expect(wireEntries(call, at: 0) == nil, "\(content)")
        }
        let options = DBusValue.variantDictionary([("mtu", .uint16(23))])
        #expect(wireEntries(try message([.string("x"), options]), at: 1) == nil)
        #expect(wireEntries(try message([options]), at: 1) == nil)
        #expect(wireEntries(try message([.bytes([1]), options]), at: 0) == nil)
        #expect(wireEntries(try message([options, options, options]), at: 2) == nil)
        let call = try message([.variantDictionary([("a", .uint16(1)), ("b", .uint16(2))])])
        var calls = 0
        #expect(!call.forEachWireVariantEntry(at: 0) { _ in calls += 1; return false })
        #expect(calls == 1)
    }
}
