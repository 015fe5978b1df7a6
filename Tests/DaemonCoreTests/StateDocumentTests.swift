// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Testing

private let label = StateDocument.SavedValue(
    uuid: BluetoothUUID("12345678-1234-5678-1234-56789abcdef1")!, value: Array("hi".utf8), minLength: 1, maxLength: 20)

private func decodingError(_ text: String) -> StateDecodingError? {
    do {
        _ = try StateDocument(decoding: Array(text.utf8))
        return nil
    } catch {
        return error
    }
}

@Suite("State document: the versioned JSON of state.json")
struct StateDocumentTests {
    @Test("every section survives an encode/decode round trip, ids with dots and quotes included")
    func roundTrip() throws {
        let document = StateDocument(
            characteristics: ["label": label, "svc.2a19": .init(uuid: BluetoothUUID(uuid16: 0x2A19), value: [], minLength: 0, maxLength: 1)],
            descriptors: ["label.\"desc\"": .init(uuid: BluetoothUUID(uuid16: 0x2901), value: [0, 0xFF], minLength: 0, maxLength: 512)],
            sources: ["counter": .init(counter: -9_223_372_036_854_775_808)],
            advertisements: ["beacon": false, "main": true])
        let decoded = try StateDocument(decoding: document.encoded())
        #expect(decoded == document)
    }

    @Test("encoding is deterministic: ids sorted, lowercase hex, fixed key order")
    func deterministic() {
        let document = StateDocument(
            characteristics: ["b": label, "a": .init(uuid: BluetoothUUID(uuid16: 0x2A19), value: [0xAB], minLength: 0, maxLength: 1)],
            advertisements: ["adv": true])
        let text = String(decoding: document.encoded(), as: UTF8.self)
        #expect(
            text == """
                {
                  "version": 1,
                  "characteristics": {
                    "a": {"uuid": "00002a19-0000-1000-8000-00805f9b34fb", "value": "ab", "minLength": 0, "maxLength": 1},
                    "b": {"uuid": "12345678-1234-5678-1234-56789abcdef1", "value": "6869", "minLength": 1, "maxLength": 20}
                  },
                  "descriptors": {},
                  "sources": {},
                  "advertisements": {
                    "adv": {"enabled": true}
                  }
                }

                """)
        #expect(document.encoded() == StateDocument(characteristics: ["a": document.characteristics["a"]!, "b": label], advertisements: ["adv": true]).encoded())
    }

    @Test("a truncated file is a syntax error with its position")
    func truncated() throws {
        let full = String(decoding: StateDocument(characteristics: ["label": label]).encoded(), as: UTF8.self)
        let error = try #require(decodingError(String(full.prefix(full.count / 2))))
        #expect(error.kind == .syntax)
        #expect(error.description.contains("line "))
    }

    @Test("a newer version is futureVersion, not a shape error")
    func futureVersion() throws {
        let error = try #require(decodingError(#"{"version": 4, "characteristics": {"x": []}}"#))
        #expect(error.kind == .futureVersion(4))
        #expect(error.path == "version")
    }

    @Test(
        "each wrong shape names its JSON path",
        arguments: [
            (#"[]"#, "", "expected an object, found array"),
            (#"{"characteristics": {}}"#, "version", "missing"),
            (#"{"version": 0}"#, "version", "unsupported version 0"),
            (#"{"version": "1"}"#, "version", "expected an integer, found string"),
            (#"{"version": 1, "extra": 1}"#, "extra", "unknown key"),
            (#"{"version": 1, "characteristics": []}"#, "characteristics", "expected an object, found array"),
            (#"{"version": 1, "characteristics": {"a.b": {"uuid": "2a19", "value": "abc", "minLength": 0, "maxLength": 4}}}"#,
             #"characteristics["a.b"].value"#, "odd number of hex digits"),
            (#"{"version": 1, "descriptors": {"d": {"uuid": "2901", "value": "zz", "minLength": 0, "maxLength": 4}}}"#,
             #"descriptors["d"].value"#, "invalid hex digit in \"zz\""),
            (#"{"version": 1, "characteristics": {"c": {"uuid": "nope", "value": "", "minLength": 0, "maxLength": 4}}}"#,
             #"characteristics["c"].uuid"#, "invalid UUID \"nope\""),
            (#"{"version": 1, "characteristics": {"c": {"uuid": "2a19", "value": "", "minLength": 0}}}"#,
             #"characteristics["c"].maxLength"#, "missing"),
            (#"{"version": 1, "characteristics": {"c": {"uuid": "2a19", "value": "", "minLength": 0, "maxLength": 513}}}"#,
             #"characteristics["c"].maxLength"#, "length 513 is outside 0...512"),
            (#"{"version": 1, "sources": {"s": {"counter": 1.5}}}"#, #"sources["s"].counter"#, "expected an integer, found number 1.5"),
            (#"{"version": 1, "advertisements": {"a": {"enabled": 1}}}"#, #"advertisements["a"].enabled"#, "expected a boolean, found number"),
        ])
    func shapeErrors(text: String, path: String, message: String) throws {
        let error = try #require(decodingError(text))
        #expect(error.kind == .shape)
        #expect(error.path == path)
        #expect(error.message == message)
    }

    @Test("advertising data kept for restarts makes a version-2 document; without it the file stays version 1")
    func versionTwoOnlyWhenNeeded() throws {
        var document = StateDocument(advertisements: ["main": true])
        #expect(String(decoding: document.encoded(), as: UTF8.self).contains("\"version\": 1,"))
        document.advertisementData = ["main": #"{"localName":"kept \"x\""}"#]
        let text = String(decoding: document.encoded(), as: UTF8.self)
        #expect(text.contains("\"version\": 2,"))
        #expect(try StateDocument(decoding: document.encoded()) == document)
        let v1 = decodingError(#"{"version": 1, "advertisementData": {"main": "{}"}}"#)
        #expect(v1?.path == "advertisementData")
        let notText = decodingError(#"{"version": 2, "advertisementData": {"main": {}}}"#)
        #expect(notText?.path == #"advertisementData["main"]"#)
    }

    @Test("handles make a version-3 document that round-trips; without them the older version stays")
    func handlesRoundTrip() throws {
        var document = StateDocument(characteristics: ["label": label])
        document.handles = AttributeHandles(
            services: ["svc": 0x40], characteristics: ["label": 0x42, "b": 0x45], descriptors: ["label.2901": 0x43])
        let text = String(decoding: document.encoded(), as: UTF8.self)
        #expect(text.contains("\"version\": 3,"))
        #expect(
            text.hasSuffix(
                """
                  "handles": {
                    "services": {
                      "svc": 64
                    },
                    "characteristics": {
                      "b": 69,
                      "label": 66
                    },
                    "descriptors": {
                      "label.2901": 67
                    }
                  }
                }

                """))
        #expect(try StateDocument(decoding: document.encoded()) == document)
        #expect(decodingError(#"{"version": 2, "handles": {}}"#)?.path == "handles", "version 2 has no handles")
    }

    @Test("old files (versions 1 and 2) load with no handles")
    func oldFilesLoad() throws {
        let v1 = try StateDocument(decoding: Array(#"{"version": 1, "advertisements": {"a": {"enabled": true}}}"#.utf8))
        #expect(v1.advertisements == ["a": true] && v1.handles.isEmpty && v1.discardedHandles == nil)
        let v2 = try StateDocument(decoding: Array(#"{"version": 2, "advertisementData": {"a": "{}"}}"#.utf8))
        #expect(v2.advertisementData == ["a": "{}"] && v2.handles.isEmpty)
    }

    @Test(
        "bad handles are dropped with the place named; everything else in the file is kept",
        arguments: [
            (#""handles": {"services": {"s": 0}}"#, #"handles.services["s"]"#, "handle 0 is outside 1...65535"),
            (#""handles": {"characteristics": {"c": 65536}}"#, #"handles.characteristics["c"]"#, "handle 65536 is outside 1...65535"),
            (#""handles": {"descriptors": {"d": "0x10"}}"#, #"handles.descriptors["d"]"#, "expected an integer, found string"),
            (#""handles": {"bogus": {}}"#, "handles.bogus", "unknown key"),
            (#""handles": []"#, "handles", "expected an object, found array"),
        ])
    func badHandles(section: String, path: String, message: String) throws {
        let text = #"{"version": 3, "advertisements": {"a": {"enabled": true}}, "# + section + "}"
        let document = try StateDocument(decoding: Array(text.utf8))
        #expect(document.advertisements == ["a": true])
        #expect(document.handles.isEmpty)
        #expect(document.discardedHandles?.path == path)
        #expect(document.discardedHandles?.message == message)
    }
}
