// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("JSON parser")
struct JSONParserTests {
    private func syntaxError(_ text: String) -> String? {
        do {
            _ = try JSONParser.parse(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("objects keep key order and every value its line and column")
    func positionsAndOrder() throws {
        let value = try JSONParser.parse("{\n  \"b\": [1, true],\n  \"a\": {\"x\": null}\n}")
        let members = try #require(value.objectValue)
        #expect(members.map(\.key) == ["b", "a"])
        #expect(members[0].keyPosition == SourcePosition(line: 2, column: 3))
        #expect(members[0].value.position == SourcePosition(line: 2, column: 8))
        #expect(members[0].value.arrayValue?[1].kind == .bool(true))
        #expect(members[1].value.position == SourcePosition(line: 3, column: 8))
        #expect(members[1].value["x"]?.kind == .null)
    }

    @Test("columns count Unicode scalars, not bytes")
    func columnsCountScalars() {
        #expect(syntaxError("[\"é€😀\" x]") == "line 1, column 8: expected ',' or ']' after array element")
    }

    @Test("integers keep full 64-bit precision")
    func exactIntegers() throws {
        let value = try JSONParser.parse("[18446744073709551615, -9223372036854775808, 9007199254740993, 1.5e3]")
        let elements = try #require(value.arrayValue)
        let numbers = elements.compactMap(\.numberValue)
        #expect(numbers[0].uint64Value == UInt64.max)
        #expect(numbers[1].int64Value == Int64.min)
        #expect(numbers[2].int64Value == 9_007_199_254_740_993)  // not representable as Double
        #expect(numbers[3].literal == "1.5e3")
        #expect(numbers[3].isInteger == false)
        #expect(numbers[3].doubleValue == 1500)
    }

    @Test("string escapes including surrogate pairs")
    func escapes() throws {
        let value = try JSONParser.parse(#"["a\"\\\/\b\f\n\r\t", "\u00e9\uD83D\uDE00", "\u0000"]"#)
        let elements = try #require(value.arrayValue)
        let strings = elements.compactMap(\.stringValue)
        #expect(strings == ["a\"\\/\u{8}\u{C}\n\r\t", "é😀", "\u{0}"])
    }

    @Test(
        "malformed JSON names line, column and what was expected",
        arguments: [
            ("{\n  \"a\": 1\n  \"b\": 2\n}", "line 3, column 3: expected ',' or '}' after object member"),
            ("[1, 2,]", "line 1, column 7: unexpected ']', expected a value"),
            ("{\"a\": 1,}", "line 1, column 9: unexpected '}', expected a string key"),
            ("{\"a\" 1}", "line 1, column 6: expected ':' after object key"),
            ("{\"a\": 1, \"a\": 2}", "line 1, column 10: duplicate key \"a\""),
            ("[01]", "line 1, column 3: leading zeros are not allowed"),
            ("[1.]", "line 1, column 4: expected a digit after '.'"),
            ("[-]", "line 1, column 3: expected a digit"),
            ("[1e]", "line 1, column 4: expected a digit in the exponent"),
            ("[tru]", "line 1, column 2: invalid literal, expected 'true'"),
            ("\"abc", "line 1, column 1: unterminated string"),
            ("\"a\tb\"", "line 1, column 3: control character U+0009 must be escaped in a string"),
            (#"["\x"]"#, "line 1, column 3: invalid escape sequence '\\x'"),
            (#"["\uD800"]"#, "line 1, column 3: unpaired surrogate \\uD800"),
            (#"["\uDC00"]"#, "line 1, column 3: unpaired surrogate \\uDC00"),
            (#"["\u12G4"]"#, "line 1, column 3: invalid \\u escape: expected 4 hexadecimal digits"),
            ("{} []", "line 1, column 4: unexpected '[' after the JSON value"),
            ("", "line 1, column 1: unexpected end of input, expected a value"),
            ("// comment\n{}", "line 1, column 1: unexpected '/', expected a value"),
            ("[NaN]", "line 1, column 2: unexpected 'N', expected a value"),
        ])
    func syntaxErrors(text: String, expected: String) {
        #expect(syntaxError(text) == expected)
    }

    @Test("invalid UTF-8 is rejected")
    func invalidUTF8() {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse([0x22, 0xC0, 0xAF, 0x22]) }  // overlong '/'
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // surrogate
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse([0x22, 0xE2, 0x82, 0x22]) }  // truncated
    }

    @Test("nesting is bounded instead of overflowing the stack")
    func depthLimit() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(syntaxError(deep)?.contains("nesting deeper than 256 levels") == true)
        let fine = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(syntaxError(fine) == nil)
    }

    @Test("a leading byte order mark is ignored")
    func byteOrderMark() throws {
        let value = try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array("{\"a\": 1}".utf8))
        #expect(value["a"]?.numberValue?.int64Value == 1)
    }

    @Test("the one writer: members in their order, escapes, numbers as written; its text parses back")
    func writer() throws {
        let value = JSONValue.object([
            ("b", .number(-12)), ("a", .array([.string("x\"\n\u{1}é"), .bool(true), .null])),
            ("none", .optional(nil as String?)), ("some", .optional(["y"])),
        ])
        #expect(value.canonicalText == #"{"b":-12,"a":["x\"\n\u0001é",true,null],"none":null,"some":["y"]}"#)
        let parsed = try JSONParser.parse(Array(value.canonicalText.utf8))
        #expect(parsed.canonicalText == value.canonicalText)
        let literal = try JSONParser.parse(Array(#"[36.40, 1e3]"#.utf8))
        #expect(literal.canonicalText == "[36.40,1e3]", "a parsed number keeps its literal")
    }
}
