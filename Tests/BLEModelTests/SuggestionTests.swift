// SPDX-License-Identifier: MIT

import BLEModel
import Testing

/// "did you mean" hints: at most two edits away, case-insensitive, the first candidate on
/// ties; the distance is computed only within that limit (`--check` on long
/// unknown keys was quadratic).
@Suite("Did-you-mean suggestions")
struct SuggestionTests {
    /// The "unknown ..." issues of a refused document (a document of only a wrong key also
    /// misses `services`).
    private func messages(_ text: String) throws -> [String] {
        try #require(load(text).failure).issues.map(\.description).filter { $0.contains(": unknown ") }
    }

    @Test("misspellings one or two edits away get the intended name")
    func nearMisses() throws {
        #expect(try messages(#"{"version": 1, "adaptor": "hci0"}"#) == [
            #"adaptor: unknown key "adaptor" (did you mean "adapter"?)"#
        ])
        // case-insensitive, two edits (deleted 'e', substituted 'r'), and a transposition (two edits)
        #expect(try messages(#"{"version": 1, "ADAPTX": "hci0"}"#) == [
            #"ADAPTX: unknown key "ADAPTX" (did you mean "adapter"?)"#
        ])
        #expect(try messages(#"{"version": 1, "adapetr": "hci0"}"#) == [
            #"adapetr: unknown key "adapetr" (did you mean "adapter"?)"#
        ])
    }

    @Test("three edits or more: no suggestion")
    func farMisses() throws {
        #expect(try messages(#"{"version": 1, "adXXXer": "hci0"}"#) == [#"adXXXer: unknown key "adXXXer""#])
        #expect(try messages(#"{"version": 1, "a": "hci0"}"#) == [#"a: unknown key "a""#])
    }

    @Test("long unknown keys and flags: no suggestion, every one reported")
    func longWords() throws {
        let keys = (0..<50).map { "\(String(repeating: "adapter", count: 300))\($0)" }
        let members = keys.map { "\"\($0)\": 1" }.joined(separator: ", ")
        let found = try messages(#"{"version": 1, "# + members + "}")
        #expect(found == keys.map { "\($0): unknown key \"\($0)\"" })

        let flag = String(repeating: "r", count: 5000)
        let flagErrors = try messages(
            #"{"version": 1, "services": [{"id": "s", "uuid": "180F", "characteristics": [{"id": "c", "uuid": "2A19", "flags": [""#
                + flag + #""], "value": {"uint8": 1}}]}]}"#)
        #expect(flagErrors.contains { $0.hasSuffix("unknown flag \"\(flag)\"") })
        #expect(!flagErrors.contains { $0.contains("did you mean") })
    }

    @Test("a long key two edits from a long candidate is still found")
    func longCandidates() throws {
        let id = String(repeating: "battery", count: 200)
        let text = """
            {"version": 1, "services": [
              {"id": "\(id)", "uuid": "180F", "characteristics": [
                {"id": "c", "uuid": "2A19", "flags": ["read"], "value": {"uint8": 1}}]},
              {"id": "t", "uuid": "180A", "includes": ["x\(id.dropLast())"], "characteristics": [
                {"id": "d", "uuid": "2A29", "flags": ["read"], "value": {"utf8": "x"}}]}]}
            """
        let found = try #require(load(text).failure).issues.map(\.description)
        #expect(found.contains { $0.hasSuffix("no service has id \"x\(id.dropLast())\" (did you mean \"\(id)\"?)") })
    }
}
