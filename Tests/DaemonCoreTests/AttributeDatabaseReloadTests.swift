// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Foundation
import Testing

private let before = """
    {"version": 1, "services": [
      {"id": "svc", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
        {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write", "notify"],
         "value": {"utf8": "hello"}, "minLength": 1, "maxLength": 20},
        {"id": "mode", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["read", "write"],
         "value": {"hex": "01"}},
        {"id": "level", "uuid": "2A19", "flags": ["read", "notify"], "value": {"uint8": 100}}
      ]}]}
    """

private func database(_ text: String) throws -> AttributeDatabase {
    AttributeDatabase(configuration: try ConfigurationLoader.parse(Array(text.utf8)).get().configuration)
}

@Suite("Attribute database across a reload")
struct AttributeDatabaseReloadTests {
    @Test("written values survive a rebuilt tree; unwritten ones take the new configuration's value")
    func carryOverWritten() throws {
        let old = try database(before)
        old.write(try #require(old["label"]), bytes: Array("kitchen".utf8), offset: 0)
        let edited = before.replacingOccurrences(of: "\"uint8\": 100", with: "\"uint8\": 50")
        let new = try database(
            edited.replacingOccurrences(
                of: "\"value\": {\"uint8\": 50}}",
                with: "\"value\": {\"uint8\": 50}},\n{\"id\": \"extra\", \"uuid\": \"2A1A\", \"flags\": [\"read\"]}"))
        let dropped = new.carryOver(from: old)
        #expect(dropped.isEmpty)
        #expect(new["label"]?.value == Array("kitchen".utf8))
        #expect(new["label"]?.hasBeenWritten == true)
        #expect(new["level"]?.value == [50])
        #expect(new["mode"]?.hasBeenWritten == false)
        #expect(new["extra"] != nil)
    }

    @Test("a written value that no longer fits is dropped with its reason")
    func carryOverDrops() throws {
        let old = try database(before)
        old.write(try #require(old["label"]), bytes: Array("a long kitchen label".utf8), offset: 0)
        old.write(try #require(old["mode"]), bytes: [2], offset: 0)
        let new = try database(
            before.replacingOccurrences(of: "\"maxLength\": 20", with: "\"maxLength\": 8")
                .replacingOccurrences(of: "56789abcdef2", with: "56789abcdef9"))
        let dropped = new.carryOver(from: old)
        #expect(
            dropped == [
                DroppedValue(id: "label", reason: "length 20 is outside 1...8"),
                DroppedValue(
                    id: "mode",
                    reason: "UUID changed from 12345678-1234-5678-1234-56789abcdef2 to 12345678-1234-5678-1234-56789abcdef9"),
            ])
        #expect(new["label"]?.value == Array("hello".utf8))
        #expect(new["mode"]?.value == [1])
    }

    @Test("a new initial value replaces the current one only where nobody wrote")
    func redefine() throws {
        let db = try database(before)
        let label = try #require(db["label"])
        let level = try #require(db["level"])
        db.write(label, bytes: Array("kitchen".utf8), offset: 0)
        var notified: [String] = []
        db.observeChanges { attribute, origin in
            if origin == .configuration { notified.append(attribute.id) }
        }
        #expect(db.redefineInitialValue(level, to: [42]))
        #expect(!db.redefineInitialValue(label, to: Array("bye".utf8)))
        #expect(level.value == [42] && level.initialValue == [42] && !level.hasBeenWritten)
        #expect(label.value == Array("kitchen".utf8) && label.initialValue == Array("bye".utf8))
        #expect(notified == ["level"])
    }
}
