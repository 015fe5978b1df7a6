// SPDX-License-Identifier: MIT

/// A strict RFC 8259 JSON parser that records the position of every value.
///
/// Strict means: exactly one value surrounded by optional whitespace (space, tab, LF, CR);
/// no comments, trailing commas, single quotes, `NaN`, leading `+` or leading zeros; strings
/// must be valid UTF-8 with control characters escaped; `\u` escapes must pair surrogates.
/// A leading UTF-8 byte order mark is skipped (RFC 8259 §8.1 allows ignoring it).
/// A key that appears twice in one object is an error. Nesting deeper than
/// `maximumDepth` is an error rather than a stack overflow.
public struct JSONParser {
    /// Arrays and objects nested deeper than this are rejected.
    public static let maximumDepth = 256

    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var column = 1

    /// Parses one JSON text.
    /// - Throws: `JSONSyntaxError` naming the first problem's line and column.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        return try parser.parseDocument()
    }

    /// Parses one JSON text given as a Swift string (UTF-8).
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    // MARK: - Cursor

    private var position: SourcePosition { SourcePosition(line: line, column: column) }
    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private func fail(_ message: String, at position: SourcePosition? = nil) -> JSONSyntaxError {
        JSONSyntaxError(position: position ?? self.position, message: message)
    }

    private func describeCurrent() -> String {
        guard let byte = current else { return "end of input" }
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + hex2(byte)
    }

    private mutating func skipWhitespace() {
        while let byte = current,
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n")
                || byte == UInt8(ascii: "\r")
        {
            advance()
        }
    }

    // MARK: - Grammar

    private mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            index = 3
        }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if current != nil {
            throw fail("unexpected \(describeCurrent()) after the JSON value")
        }
        return value
    }

    private mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        let start = position
        guard let byte = current else { throw fail("unexpected end of input, expected a value") }
        switch byte {
        case UInt8(ascii: "{"):
            return JSONValue(.object(try parseObject(depth: depth + 1)), at: start)
        case UInt8(ascii: "["):
            return JSONValue(.array(try parseArray(depth: depth + 1)), at: start)
        case UInt8(ascii: "\""):
            return JSONValue(.string(try parseString()), at: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONValue(.number(try parseNumber()), at: start)
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return JSONValue(.bool(true), at: start)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return JSONValue(.bool(false), at: start)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return JSONValue(.null, at: start)
        default:
            throw fail("unexpected \(describeCurrent()), expected a value")
        }
    }

    private mutating func expectLiteral(_ word: String) throws(JSONSyntaxError) {
        let start = position
        for expected in word.utf8 {
            guard current == expected else { throw fail("invalid literal, expected '\(word)'", at: start) }
            advance()
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> [JSONMember] {
        guard depth <= Self.maximumDepth else { throw fail("nesting deeper than \(Self.maximumDepth) levels") }
        advance()  // {
        var members: [JSONMember] = []
        var seen: Set<String> = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            advance()
            return members
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else {
                throw fail("unexpected \(describeCurrent()), expected a string key")
            }
            let keyPosition = position
            let key = try parseString()
            guard seen.insert(key).inserted else {
                throw fail("duplicate key \"\(key)\"", at: keyPosition)
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("expected ':' after object key") }
            advance()
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append(JSONMember(key: key, keyPosition: keyPosition, value: value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                advance()
            case UInt8(ascii: "}"):
                advance()
                return members
            default:
                throw fail("expected ',' or '}' after object member")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> [JSONValue] {
        guard depth <= Self.maximumDepth else { throw fail("nesting deeper than \(Self.maximumDepth) levels") }
        advance()  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            advance()
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                advance()
            case UInt8(ascii: "]"):
                advance()
                return elements
            default:
                throw fail("expected ',' or ']' after array element")
            }
        }
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> JSONNumber {
        let start = index
        if current == UInt8(ascii: "-") { advance() }
        guard let first = current, isDigit(first) else { throw fail("expected a digit") }
        advance()
        if first == UInt8(ascii: "0"), let next = current, isDigit(next) {
            throw fail("leading zeros are not allowed")
        }
        while let byte = current, isDigit(byte) { advance() }
        if current == UInt8(ascii: ".") {
            advance()
            guard let byte = current, isDigit(byte) else { throw fail("expected a digit after '.'") }
            while let byte = current, isDigit(byte) { advance() }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            advance()
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { advance() }
            guard let byte = current, isDigit(byte) else { throw fail("expected a digit in the exponent") }
            while let byte = current, isDigit(byte) { advance() }
        }
        return JSONNumber(literal: String(decoding: bytes[start..<index], as: UTF8.self))
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = position
        advance()  // opening quote
        var buffer: [UInt8] = []
        while true {
            guard let byte = current else { throw fail("unterminated string", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                advance()
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &buffer)
            case 0x00..<0x20:
                throw fail("control character U+00\(hex2(byte)) must be escaped in a string")
            case 0x20..<0x80:
                buffer.append(byte)
                advance()
            default:
                try copyUTF8Sequence(into: &buffer)
            }
        }
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(JSONSyntaxError) {
        let escapeStart = position
        advance()  // backslash
        guard let byte = current else { throw fail("unterminated string") }
        let simple: UInt8?
        switch byte {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"): simple = nil
        default:
            let shown = byte >= 0x20 && byte < 0x7F ? String(Unicode.Scalar(byte)) : "byte 0x" + hex2(byte)
            throw fail("invalid escape sequence '\\\(shown)'", at: escapeStart)
        }
        advance()
        if let simple {
            buffer.append(simple)
            return
        }
        let unit = try parseHex4(escapeStart: escapeStart)
        var scalarValue = UInt32(unit)
        if (0xD800...0xDBFF).contains(unit) {
            guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                throw fail("unpaired surrogate \\u\(hex4(unit))", at: escapeStart)
            }
            let lowStart = position
            advance()
            advance()
            let low = try parseHex4(escapeStart: lowStart)
            guard (0xDC00...0xDFFF).contains(low) else {
                throw fail("unpaired surrogate \\u\(hex4(unit))", at: escapeStart)
            }
            scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(unit) {
            throw fail("unpaired surrogate \\u\(hex4(unit))", at: escapeStart)
        }
        // Non-surrogate values and combined pairs are always valid scalars.
        let scalar = Unicode.Scalar(scalarValue) ?? "\u{FFFD}"
        buffer.append(contentsOf: String(Character(scalar)).utf8)
    }

    private mutating func parseHex4(escapeStart: SourcePosition) throws(JSONSyntaxError) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = hexDigitValue(byte) else {
                throw fail("invalid \\u escape: expected 4 hexadecimal digits", at: escapeStart)
            }
            value = value << 4 | UInt16(digit)
            advance()
        }
        return value
    }

    /// Copies one multi-byte UTF-8 sequence, rejecting overlong forms, surrogates and
    /// values above U+10FFFF (the rules of RFC 3629 §4).
    private mutating func copyUTF8Sequence(into buffer: inout [UInt8]) throws(JSONSyntaxError) {
        let lead = bytes[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: throw fail("invalid UTF-8 byte 0x\(hex2(lead))")
        }
        guard index + length <= bytes.count else { throw fail("truncated UTF-8 sequence") }
        for offset in 1..<length {
            let byte = bytes[index + offset]
            let range = offset == 1 ? secondRange : 0x80...0xBF
            guard range.contains(byte) else { throw fail("invalid UTF-8 sequence") }
        }
        for _ in 0..<length {
            buffer.append(bytes[index])
            advance()
        }
    }
}
