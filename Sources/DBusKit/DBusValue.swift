// SPDX-License-Identifier: MIT

/// One D-Bus value of any type, as sent or received in a message body.
///
/// - `bytes` is the `ay` fast path: it is marshalled with one block copy, and every `ay`
///   received decodes to `.bytes` (never to `.array("y", …)`).
/// - `array` of dict entries is spelled `dictionary`; every `a{..}` received decodes to it.
/// - `unixFD` carries a descriptor number. Appending it makes libdbus `dup` it (the caller
///   keeps ownership of its number); a received one is a fresh descriptor owned by the
///   receiver, who must close it.
///
/// Only `variant` is stored out of line (the other containers hold arrays, which already
/// are), so a basic value costs no heap allocation.
public enum DBusValue: Sendable, Equatable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(ObjectPath)
    case signature(String)
    case unixFD(Int32)
    case bytes([UInt8])
    /// An array whose elements all have the single complete type `elementSignature`.
    case array(elementSignature: String, [DBusValue])
    /// `a{KV}`: keys of the basic type `keySignature`, values of `valueSignature`, in order.
    case dictionary(keySignature: String, valueSignature: String, [DBusDictionaryEntry])
    case structure([DBusValue])
    indirect case variant(DBusValue)

    /// The value's D-Bus type signature (a single complete type).
    public var signature: String {
        switch self {
        case .byte: return "y"
        case .bool: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .bytes: return "ay"
        case .array(let element, _): return "a" + element
        case .dictionary(let key, let value, _): return "a{" + key + value + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }
}

/// One `{key, value}` entry of a `DBusValue.dictionary`.
public struct DBusDictionaryEntry: Sendable, Equatable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}
