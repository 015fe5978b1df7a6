// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc

// An `a{sv}` argument read from the message's wire bytes (`dbus_message_marshal`) instead
// of through libdbus's iterator, whose `dbus_message_iter_next` re-walks each entry's type
// (about 470 instructions a step, two steps an entry). libdbus validated the whole message
// when it read it; this reader still checks every length against the buffer and gives up,
// leaving the caller to take the iterator path, on anything it does not expect.

extension Message {
    /// Hands each entry of argument `index`, an `a{sv}` that is the first argument or follows
    /// one `ay`, to `body` in wire order, as long as every variant holds one of the basic
    /// types `s`, `o`, `q`, `b` and `body` returns true.
    /// - Returns: true when every entry was handed over and accepted; false when the fast
    ///   path does not apply (other argument layout, another variant type, a length that
    ///   does not fit, `body` refusing an entry): the caller then reads the argument the
    ///   usual way, from the start, and nothing `body` did may count.
    public func forEachWireVariantEntry(at index: Int, _ body: (borrowing WireVariantEntry) -> Bool) -> Bool {
        guard let signature = dbus_message_get_signature(raw) else { return false }
        let prefix: StaticString
        switch index {
        case 0: prefix = "a{sv}"
        case 1: prefix = "aya{sv}"
        default: return false
        }
        guard strncmp(signature, Self.cString(prefix), prefix.utf8CodeUnitCount) == 0 else { return false }
        var data: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &data, &length) != 0, let data else { return false }
        defer { dbus_free(data) }
        let bytes = UnsafeRawBufferPointer(start: data, count: Int(length))
        guard var reader = WireReader(message: bytes) else { return false }
        if index == 1 {
            guard let count = reader.uint32(), reader.skip(Int(count)) else { return false }
        }
        return reader.variantDictionary(body)
    }

    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

/// One entry during `Message.forEachWireVariantEntry(at:_:)`, valid only during that call.
public struct WireVariantEntry: ~Copyable {
    /// The key's bytes (UTF-8, no terminator).
    let key: UnsafeRawBufferPointer
    /// The variant's type code (`s`, `o`, `q` or `b`).
    let type: UInt8
    /// `s`/`o`: the text's bytes; `q`, `b`: empty.
    let text: UnsafeRawBufferPointer
    /// `q`, `b`: the value.
    let number: UInt32

    /// Whether the key is `name`.
    public func keyIs(_ name: StaticString) -> Bool {
        key.count == name.utf8CodeUnitCount && (key.isEmpty || memcmp(key.baseAddress!, name.utf8Start, key.count) == 0)
    }

    /// The content as a `q`.
    public var uint16: UInt16? { type == UInt8(ascii: "q") ? UInt16(truncatingIfNeeded: number) : nil }

    /// The content as a `b`.
    public var bool: Bool? { type == UInt8(ascii: "b") ? number != 0 : nil }

    /// The content as an `s`; `previous` itself when it is equal (no new string).
    public func string(reusing previous: String? = nil) -> String? {
        type == UInt8(ascii: "s") ? Self.text(text, reusing: previous) : nil
    }

    /// The content as an `o`, its path as a string; `previous` itself when it is equal.
    public func objectPath(reusing previous: String? = nil) -> String? {
        type == UInt8(ascii: "o") ? Self.text(text, reusing: previous) : nil
    }

    private static func text(_ bytes: UnsafeRawBufferPointer, reusing previous: String?) -> String {
        if var previous,
            previous.withUTF8({ $0.count == bytes.count && ($0.isEmpty || memcmp($0.baseAddress!, bytes.baseAddress!, $0.count) == 0) })
        {
            return previous
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Reads a marshalled message's body. Offsets are from the body's start, which is 8-aligned
/// in the message, so alignment from the body start is alignment in the message.
struct WireReader {
    private let body: UnsafeRawBufferPointer
    private let littleEndian: Bool
    private var position = 0

    /// The body of `message` (fixed header, header fields, padding, body); nil when the
    /// lengths do not fit the buffer.
    init?(message: UnsafeRawBufferPointer) {
        guard message.count >= 16 else { return nil }
        switch message[0] {
        case UInt8(ascii: "l"): littleEndian = true
        case UInt8(ascii: "B"): littleEndian = false
        default: return nil
        }
        let bodyLength = Int(Self.uint32(message, 4, littleEndian))
        let fieldsLength = Int(Self.uint32(message, 12, littleEndian))
        let bodyStart = (16 + fieldsLength + 7) & ~7
        guard fieldsLength <= message.count, bodyLength <= message.count,
            bodyStart + bodyLength <= message.count
        else { return nil }
        body = UnsafeRawBufferPointer(rebasing: message[bodyStart..<(bodyStart + bodyLength)])
    }

    private static func uint32(_ buffer: UnsafeRawBufferPointer, _ offset: Int, _ littleEndian: Bool) -> UInt32 {
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return littleEndian ? UInt32(littleEndian: value) : UInt32(bigEndian: value)
    }

    private mutating func align(_ boundary: Int) -> Bool {
        let aligned = (position + boundary - 1) & ~(boundary - 1)
        guard aligned <= body.count else { return false }
        position = aligned
        return true
    }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= body.count - position else { return false }
        position += count
        return true
    }

    mutating func uint32() -> UInt32? {
        guard align(4), body.count - position >= 4 else { return nil }
        defer { position += 4 }
        return Self.uint32(body, position, littleEndian)
    }

    private mutating func uint16() -> UInt16? {
        guard align(2), body.count - position >= 2 else { return nil }
        defer { position += 2 }
        let value = body.loadUnaligned(fromByteOffset: position, as: UInt16.self)
        return littleEndian ? UInt16(littleEndian: value) : UInt16(bigEndian: value)
    }

    /// `count` bytes then a NUL terminator; the bytes.
    private mutating func terminated(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, count < body.count - position, body[position + count] == 0 else { return nil }
        defer { position += count + 1 }
        return UnsafeRawBufferPointer(rebasing: body[position..<(position + count)])
    }

    /// A string or object path: length, bytes, NUL.
    private mutating func text() -> UnsafeRawBufferPointer? {
        guard let count = uint32() else { return nil }
        return terminated(Int(count))
    }

    /// An `a{sv}` at the current position; see `Message.forEachWireVariantEntry(at:_:)`.
    mutating func variantDictionary(_ handler: (borrowing WireVariantEntry) -> Bool) -> Bool {
        guard let length = uint32(), align(8) else { return false }
        let end = position + Int(length)
        guard end <= body.count else { return false }
        while position < end {
            guard align(8), let key = text(), position < body.count else { return false }
            let signatureLength = Int(body[position])
            position += 1
            guard signatureLength == 1, let signature = terminated(1) else { return false }
            let type = signature[0]
            var text = UnsafeRawBufferPointer(start: nil, count: 0)
            var number: UInt32 = 0
            switch type {
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                guard let bytes = self.text() else { return false }
                text = bytes
            case UInt8(ascii: "q"):
                guard let value = uint16() else { return false }
                number = UInt32(value)
            case UInt8(ascii: "b"):
                guard let value = uint32() else { return false }
                number = value
            default:
                return false
            }
            guard position <= end,
                handler(WireVariantEntry(key: key, type: type, text: text, number: number))
            else { return false }
        }
        return position == end
    }
}
