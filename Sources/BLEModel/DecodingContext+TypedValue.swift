// SPDX-License-Identifier: MIT

extension DecodingContext {
    /// A typed value without slots, as bytes.
    mutating func typedValue(_ value: JSONValue, _ path: String) -> [UInt8]? {
        guard let segments = valueSegments(value, path, allowSlots: false) else { return nil }
        return segments.flatMap { segment -> [UInt8] in
            if case .bytes(let bytes) = segment { return bytes }
            return []
        }
    }

    /// A typed value or (with `allowSlots`) a template, as segments; adjacent fixed bytes
    /// are merged.
    mutating func valueSegments(_ value: JSONValue, _ path: String, allowSlots: Bool) -> [ValueTemplate.Segment]? {
        record(value, at: path)
        switch value.kind {
        case .array(let elements):
            var result: [ValueTemplate.Segment] = []
            var ok = true
            for (index, element) in elements.enumerated() {
                if let segments = valueSegments(element, "\(path)[\(index)]", allowSlots: allowSlots) {
                    for segment in segments { Self.append(segment, to: &result) }
                } else {
                    ok = false
                }
            }
            return ok ? result : nil
        case .object(let members):
            guard members.count == 1, let member = members.first else {
                let found = members.isEmpty ? "none" : members.map { "\"\($0.key)\"" }.joined(separator: ", ")
                error(path, "expected exactly one of hex, utf8, base64, bytes or a number type; found \(found)")
                return nil
            }
            let memberPath = Self.join(path, member.key)
            record(member.value, at: memberPath)
            guard TypedValue.kinds.contains(member.key) else {
                error(
                    memberPath,
                    "unknown value type \"\(member.key)\"" + EditDistance.hint(for: member.key, among: TypedValue.kinds),
                    at: member.keyPosition)
                return nil
            }
            return valueMember(member.key, member.value, memberPath, allowSlots: allowSlots).map { [$0] }
        default:
            error(path, "expected a typed value such as {\"uint8\": 1} or an array of them, found \(value.typeName)")
            return nil
        }
    }

    private mutating func valueMember(
        _ key: String, _ value: JSONValue, _ path: String, allowSlots: Bool
    ) -> ValueTemplate.Segment? {
        do throws(ValueEncodingError) {
            switch key {
            case "hex":
                guard let text = string(value, path) else { return nil }
                return .bytes(try HexBytes.decode(text))
            case "base64":
                guard let text = string(value, path) else { return nil }
                return .bytes(try Base64.decode(text))
            case "utf8":
                guard let text = string(value, path) else { return nil }
                return allowSlots && text == "$" ? .text : .bytes(Array(text.utf8))
            case "bytes":
                guard let elements = array(value, path) else { return nil }
                var bytes: [UInt8] = []
                for (index, element) in elements.enumerated() {
                    guard let byte = integer(element, "\(path)[\(index)]", in: 0...255) else { return nil }
                    bytes.append(UInt8(byte))
                }
                return .bytes(bytes)
            default:
                guard let type = NumericType(rawValue: key) else { return nil }
                if let text = value.stringValue {
                    if allowSlots && text == "$" { return .number(type) }
                    if type == .sfloat, let special = SFloat.special(named: text) {
                        return .bytes([UInt8(special & 0xFF), UInt8(special >> 8)])
                    }
                    let allowed = type == .sfloat ? "a number, \"NaN\", \"NRes\", \"+INF\" or \"-INF\"" : "a number"
                    error(path, "expected \(allowed)\(allowSlots ? " or \"$\"" : ""), found string \"\(text)\"")
                    return nil
                }
                guard let number = value.numberValue else {
                    error(path, "expected a number, found \(value.typeName)")
                    return nil
                }
                return .bytes(try type.encode(number))
            }
        } catch {
            self.error(path, error.message)
            return nil
        }
    }

    private static func append(_ segment: ValueTemplate.Segment, to segments: inout [ValueTemplate.Segment]) {
        if case .bytes(let next) = segment, case .bytes(let previous)? = segments.last {
            segments[segments.count - 1] = .bytes(previous + next)
        } else {
            segments.append(segment)
        }
    }
}
