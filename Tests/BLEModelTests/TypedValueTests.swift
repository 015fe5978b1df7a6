// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("Typed values")
struct TypedValueTests {
    private func bytes(_ json: String) -> [UInt8]? {
        guard let value = try? JSONParser.parse(json) else { return nil }
        return try? TypedValue.decode(value, path: "value").get()
    }

    private func problem(_ json: String) -> String? {
        guard let value = try? JSONParser.parse(json) else { return "not JSON" }
        switch TypedValue.decode(value, path: "value") {
        case .success: return nil
        case .failure(let errors): return errors.description
        }
    }

    @Test("integers are little-endian and exact at their limits")
    func integerLimits() {
        #expect(bytes(#"{"uint8": 255}"#) == [0xFF])
        #expect(bytes(#"{"uint16": 513}"#) == [0x01, 0x02])
        #expect(bytes(#"{"uint32": 4294967295}"#) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(bytes(#"{"uint64": 18446744073709551615}"#) == [UInt8](repeating: 0xFF, count: 8))
        #expect(bytes(#"{"uint64": 9007199254740993}"#) == [0x01, 0, 0, 0, 0, 0, 0x20, 0])
        #expect(bytes(#"{"int8": -128}"#) == [0x80])
        #expect(bytes(#"{"int16": -2}"#) == [0xFE, 0xFF])
        #expect(bytes(#"{"int32": 2147483647}"#) == [0xFF, 0xFF, 0xFF, 0x7F])
        #expect(bytes(#"{"int64": -9223372036854775808}"#) == [0, 0, 0, 0, 0, 0, 0, 0x80])
    }

    @Test(
        "out-of-range and non-integer numbers name the path and range",
        arguments: [
            (#"{"uint8": 300}"#, "value.uint8: 300 is out of range 0...255"),
            (#"{"uint8": -1}"#, "value.uint8: -1 is out of range 0...255"),
            (#"{"int8": 128}"#, "value.int8: 128 is out of range -128...127"),
            (#"{"uint16": 65536}"#, "value.uint16: 65536 is out of range 0...65535"),
            (#"{"int32": -2147483649}"#, "value.int32: -2147483649 is out of range -2147483648...2147483647"),
            (#"{"uint64": 18446744073709551616}"#, "value.uint64: 18446744073709551616 is out of range 0...18446744073709551615"),
            (#"{"int64": 9223372036854775808}"#, "value.int64: 9223372036854775808 is out of range -9223372036854775808...9223372036854775807"),
            (#"{"uint8": 1.5}"#, "value.uint8: 1.5 is not an integer"),
            (#"{"uint8": "7"}"#, "value.uint8: expected a number, found string \"7\""),
            (#"{"float32": 1e39}"#, "value.float32: 1e39 is out of range for float32"),
            (#"{"sfloat": 1e11}"#, "value.sfloat: 1e11 is out of range for sfloat (magnitude at most 2045e7)"),
            (#"[{"uint8": 1}, {"bytes": [1, 256]}]"#, "value[1].bytes[1]: 256 is out of range 0...255"),
        ])
    func rangeErrors(json: String, expected: String) {
        #expect(problem(json) == expected)
    }

    @Test("floats are IEEE 754 little-endian")
    func floats() {
        #expect(bytes(#"{"float32": 1.5}"#) == [0x00, 0x00, 0xC0, 0x3F])
        #expect(bytes(#"{"float64": -2.25}"#) == [0, 0, 0, 0, 0, 0, 0x02, 0xC0])
    }

    @Test(
        "sfloat picks the exact or least-loss exponent",
        arguments: [
            ("36.4", [0x6C, 0xF1]),  // 364 x 10^-1
            ("0", [0x00, 0x00]),
            ("100", [0x01, 0x20]),  // 1 x 10^2
            ("-1", [0xFF, 0x0F]),  // -1 x 10^0
            ("2045", [0xFD, 0x07]),
            ("2046", [0xCD, 0x10]),  // rounds to 205 x 10^1
            ("2.04449", [0xFC, 0xD7]),  // 2044 x 10^-3, not double-rounded up to 2045
            ("0.001", [0x01, 0xD0]),  // 1 x 10^-3
            ("1e-9", [0x00, 0x00]),  // below resolution: rounds to 0
            ("20450000000", [0xFD, 0x77]),  // 2045 x 10^7, the largest magnitude
            ("-36.4", [0x94, 0xFE]),  // -364 x 10^-1
        ] as [(String, [UInt8])])
    func sfloatExamples(literal: String, expected: [UInt8]) {
        #expect(bytes(#"{"sfloat": \#(literal)}"#) == expected)
    }

    @Test("sfloat special values")
    func sfloatSpecials() {
        #expect(bytes(#"{"sfloat": "NaN"}"#) == [0xFF, 0x07])
        #expect(bytes(#"{"sfloat": "+INF"}"#) == [0xFE, 0x07])
        #expect(bytes(#"{"sfloat": "-INF"}"#) == [0x02, 0x08])
        #expect(bytes(#"{"sfloat": "NRes"}"#) == [0x00, 0x08])
    }

    @Test("hex accepts separators and any case; odd digit counts are errors")
    func hex() {
        #expect(bytes(#"{"hex": "0a:1B-2c 3D"}"#) == [0x0A, 0x1B, 0x2C, 0x3D])
        #expect(bytes(#"{"hex": ""}"#) == [])
        #expect(problem(#"{"hex": "abc"}"#) == "value.hex: odd number of hex digits (3)")
        #expect(problem(#"{"hex": "0x12"}"#) == "value.hex: invalid character \"x\" in hex string")
    }

    @Test("base64 with or without padding; malformed input is an error")
    func base64() {
        #expect(bytes(#"{"base64": "aGVsbG8="}"#) == Array("hello".utf8))
        #expect(bytes(#"{"base64": "aGVsbG8"}"#) == Array("hello".utf8))
        #expect(bytes(#"{"base64": "+/8="}"#) == [0xFB, 0xFF])
        #expect(bytes(#"{"base64": ""}"#) == [])
        #expect(problem(#"{"base64": "aGVsbG8=="}"#) == "value.base64: incorrect '=' padding")
        #expect(problem(#"{"base64": "aGV=sbG8"}"#) == "value.base64: '=' padding must be at the end (offset 4)")
        #expect(problem(#"{"base64": "aGVsbG9"}"#) == "value.base64: non-zero bits after the last byte")
        #expect(problem(#"{"base64": "a"}"#) == "value.base64: truncated base64 (1 characters)")
    }

    @Test("utf8, bytes and arrays concatenate")
    func concatenation() {
        #expect(bytes(#"[{"utf8": "hé"}, {"bytes": [0, 255]}, [{"uint8": 7}]]"#) == [0x68, 0xC3, 0xA9, 0x00, 0xFF, 0x07])
        #expect(bytes("[]") == [])
    }

    @Test("a typed value needs exactly one known key")
    func shapeErrors() {
        #expect(
            problem("{}") == "value: expected exactly one of hex, utf8, base64, bytes or a number type; found none")
        #expect(problem(#"{"uint9": 1}"#) == "value.uint9: unknown value type \"uint9\" (did you mean \"uint8\"?)")
        #expect(problem("5") == "value: expected a typed value such as {\"uint8\": 1} or an array of them, found number")
        #expect(problem(#"{"uint8": "$"}"#) == "value.uint8: expected a number, found string \"$\"")
    }
}
