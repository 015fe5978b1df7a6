// SPDX-License-Identifier: MIT

/// A typed value with slots, used to encode values produced at run time (timed updates).
///
/// Same syntax as a typed value, except that a numeric slot may be the string `"$"`
/// (`[{"uint8": 0}, {"uint16": "$"}]`) and `{"utf8": "$"}` is a text slot. Every slot
/// receives the same rendered value.
public struct ValueTemplate: Sendable, Equatable {
    public enum Segment: Sendable, Equatable {
        /// Fixed bytes.
        case bytes([UInt8])
        /// A `"$"` number slot of this type.
        case number(NumericType)
        /// A `{"utf8": "$"}` slot.
        case text
    }

    public var segments: [Segment]

    public init(segments: [Segment]) {
        self.segments = segments
    }

    /// `{"uint8": "$"}`, the default `encode` for number sources.
    public static let uint8Slot = ValueTemplate(segments: [.number(.uint8)])
    /// `{"utf8": "$"}`, the default `encode` for text sources.
    public static let utf8Slot = ValueTemplate(segments: [.text])

    /// The length of every value it makes, or nil when a text slot makes it vary.
    public var fixedWidth: Int? {
        var width = 0
        for segment in segments {
            switch segment {
            case .bytes(let bytes): width += bytes.count
            case .number(let type): width += type.byteCount
            case .text: return nil
            }
        }
        return width
    }

    /// True when the template has at least one slot.
    public var hasSlot: Bool {
        segments.contains { segment in
            if case .bytes = segment { return false }
            return true
        }
    }

    /// Fills number slots with `number` (integer slots round half away from zero) and text
    /// slots with its shortest decimal text (`72`, `36.4`).
    /// - Throws: `ValueEncodingError` when the number does not fit a slot; never wraps.
    public func render(number: Double) throws(ValueEncodingError) -> [UInt8] {
        // The common `{"uint32": "$"}`: the slot's encoding is the value, no copy into a buffer.
        if segments.count == 1, case .number(let type) = segments[0] { return try type.encode(number) }
        var output: [UInt8] = []
        for segment in segments {
            switch segment {
            case .bytes(let bytes): output += bytes
            case .number(let type): output += try type.encode(number)
            case .text: output += Array(Self.decimalText(number).utf8)
            }
        }
        return output
    }

    /// Fills text slots with `text` (UTF-8) and number slots with `text` read as a decimal
    /// number (surrounding whitespace ignored).
    /// - Throws: `ValueEncodingError` when a number slot gets non-numeric text or a number
    ///   out of range.
    public func render(text: String) throws(ValueEncodingError) -> [UInt8] {
        var output: [UInt8] = []
        for segment in segments {
            switch segment {
            case .bytes(let bytes): output += bytes
            case .text: output += Array(text.utf8)
            case .number(let type):
                let trimmed = String(text.unicodeScalars.filter { !($0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r") })
                guard DecimalText(trimmed) != nil, let value = Double(trimmed) else {
                    throw ValueEncodingError("\"\(text)\" is not a number")
                }
                output += try type.encode(value)
            }
        }
        return output
    }

    /// Decodes a template from JSON; issues name paths below `path`.
    public static func decode(_ json: JSONValue, path: String) -> Result<ValueTemplate, ConfigurationErrors> {
        var context = DecodingContext()
        guard let segments = context.valueSegments(json, path, allowSlots: true), !context.hasErrors else {
            return .failure(ConfigurationErrors(issues: context.issues))
        }
        return .success(ValueTemplate(segments: segments))
    }

    static func decimalText(_ number: Double) -> String {
        if number.isFinite, number == number.rounded(), abs(number) < 1e15 { return String(Int64(number)) }
        return "\(number)"
    }
}
