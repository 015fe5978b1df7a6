// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("Value templates")
struct ValueTemplateTests {
    private func template(_ json: String) throws -> ValueTemplate {
        try ValueTemplate.decode(JSONParser.parse(json), path: "encode").get()
    }

    @Test("number slots render with fixed bytes around them")
    func numberSlots() throws {
        let heartRate = try template(#"[{"uint8": 0}, {"uint8": "$"}]"#)
        #expect(try heartRate.render(number: 72) == [0x00, 72])
        #expect(try heartRate.render(number: 71.5) == [0x00, 72])  // rounds half away from zero
        let mixed = try template(#"[{"hex": "aa"}, {"int16": "$"}, {"sfloat": "$"}]"#)
        #expect(try mixed.render(number: -2) == [0xAA, 0xFE, 0xFF, 0xFE, 0x0F])
    }

    @Test("out-of-range numbers are errors, never wrapped")
    func outOfRange() throws {
        let slot = try template(#"{"uint8": "$"}"#)
        #expect(throws: ValueEncodingError("256 is out of range 0...255")) { try slot.render(number: 256) }
        #expect(throws: ValueEncodingError("-1 is out of range 0...255")) { try slot.render(number: -0.5) }
        #expect(throws: ValueEncodingError("nan is not a finite number")) { try slot.render(number: .nan) }
        let wide = try template(#"{"uint64": "$"}"#)
        #expect(throws: ValueEncodingError.self) { try wide.render(number: 1.8446744073709552e19) }
        #expect(try wide.render(number: 4096) == [0, 0x10, 0, 0, 0, 0, 0, 0])
    }

    @Test("text slots take text; number slots parse it")
    func textSlots() throws {
        let label = try template(#"[{"utf8": "T="}, {"utf8": "$"}]"#)
        #expect(try label.render(text: "21.5") == Array("T=21.5".utf8))
        #expect(try label.render(number: 21) == Array("T=21".utf8))
        let slot = try template(#"{"int8": "$"}"#)
        #expect(try slot.render(text: " -5\n") == [0xFB])
        #expect(throws: ValueEncodingError("\"warm\" is not a number")) { try slot.render(text: "warm") }
    }

    @Test("sfloat slots encode runtime readings")
    func sfloatSlot() throws {
        let slot = try template(#"{"sfloat": "$"}"#)
        #expect(try slot.render(number: 36.4) == [0x6C, 0xF1])
        #expect(try slot.render(number: .infinity) == [0xFE, 0x07])
        #expect(try slot.render(number: 0.1 + 0.2) == [0x03, 0xF0])  // 0.30000000000000004 -> 3 x 10^-1
    }

    @Test("default templates are the documented ones")
    func defaults() throws {
        #expect(try template(#"{"uint8": "$"}"#) == .uint8Slot)
        #expect(try template(#"{"utf8": "$"}"#) == .utf8Slot)
    }
}
