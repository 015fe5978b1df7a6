// SPDX-License-Identifier: MIT
internal import CDBus

// The only code that moves DBusValue in and out of libdbus message iterators.
//
// Appending is two passes: `validate()` rejects anything libdbus would assert on (invalid
// UTF-8, NUL in strings, bad signatures, elements that do not match their array's type),
// then `append(to:)` writes without failing. A half-written message is never left behind.

extension DBusValue {
    // MARK: Message level

    /// Appends `values` as the body of `message` (a `DBusMessage*`).
    /// - Throws: `InvalidArgs` when a value is not representable; the message is unchanged.
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for value in values { try value.validate() }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values { value.append(to: &iter) }
    }

    /// Decodes the whole body of `message` (a `DBusMessage*`).
    /// - Throws: `InvalidArgs` for a body that cannot be decoded.
    static func decodeArguments(of message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != TypeCode.invalid {
            values.append(try DBusValue(from: &iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    // MARK: Validation

    /// Checks everything libdbus would otherwise assert on.
    func validate() throws(DBusError) {
        switch self {
        case .byte, .bool, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .objectPath, .bytes:
            return
        case .unixFD(let fd):
            guard fd >= 0 else { throw .invalidArgs("invalid unix fd \(fd)") }
        case .string(let string):
            try Self.validateString(string)
        case .signature(let signature):
            guard Self.isValidSignature(signature, single: false) else {
                throw .invalidArgs("invalid signature '\(signature)'")
            }
        case .array(let elementSignature, let elements):
            guard Self.isValidSignature(elementSignature, single: true) else {
                throw .invalidArgs("invalid array element signature '\(elementSignature)'")
            }
            for element in elements {
                guard element.signature == elementSignature else {
                    throw .invalidArgs("array element of type '\(element.signature)' in 'a\(elementSignature)'")
                }
                try element.validate()
            }
        case .dictionary(let keySignature, let valueSignature, let entries):
            let signature = self.signature
            guard Self.isBasic(keySignature), Self.isValidSignature(signature, single: true) else {
                throw .invalidArgs("invalid dictionary signature '\(signature)'")
            }
            for entry in entries {
                guard entry.key.signature == keySignature, entry.value.signature == valueSignature else {
                    throw .invalidArgs("entry {\(entry.key.signature)\(entry.value.signature)} in '\(signature)'")
                }
                try entry.key.validate()
                try entry.value.validate()
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("empty structure") }
            guard Self.isValidSignature(signature, single: true) else {
                throw .invalidArgs("invalid structure signature '\(signature)'")
            }
            for field in fields { try field.validate() }
        case .variant(let inner):
            guard Self.isValidSignature(inner.signature, single: true) else {
                throw .invalidArgs("variant content signature '\(inner.signature)' is invalid")
            }
            try inner.validate()
        }
    }

    static func validateString(_ string: String) throws(DBusError) {
        let utf8 = string.utf8
        let hasNUL = utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? utf8.contains(0)
        guard !hasNUL else { throw .invalidArgs("string contains a NUL byte") }
        let valid = string.withCString { dbus_validate_utf8($0, nil) != 0 }
        guard valid else { throw .invalidArgs("string is not valid UTF-8 for D-Bus") }
    }

    static func isValidSignature(_ signature: String, single: Bool) -> Bool {
        signature.withCString { single ? dbus_signature_validate_single($0, nil) != 0 : dbus_signature_validate($0, nil) != 0 }
    }

    static func isBasic(_ signature: String) -> Bool {
        signature.utf8.count == 1 && "ybnqiuxtdsogh".utf8.contains(signature.utf8.first!)
    }

    // MARK: Appending (after validate)

    func append(to iter: UnsafeMutablePointer<DBusMessageIter>) {
        var basic = DBusBasicValue()
        switch self {
        case .byte(let value): basic.byt = value; appendBasic(TypeCode.byte, &basic, iter)
        case .bool(let value): basic.bool_val = value ? 1 : 0; appendBasic(TypeCode.boolean, &basic, iter)
        case .int16(let value): basic.i16 = value; appendBasic(TypeCode.int16, &basic, iter)
        case .uint16(let value): basic.u16 = value; appendBasic(TypeCode.uint16, &basic, iter)
        case .int32(let value): basic.i32 = value; appendBasic(TypeCode.int32, &basic, iter)
        case .uint32(let value): basic.u32 = value; appendBasic(TypeCode.uint32, &basic, iter)
        case .int64(let value): basic.i64 = dbus_int64_t(value); appendBasic(TypeCode.int64, &basic, iter)
        case .uint64(let value): basic.u64 = dbus_uint64_t(value); appendBasic(TypeCode.uint64, &basic, iter)
        case .double(let value): basic.dbl = value; appendBasic(TypeCode.double, &basic, iter)
        case .unixFD(let value): basic.fd = value; appendBasic(TypeCode.unixFD, &basic, iter)
        case .string(let value): Self.appendString(TypeCode.string, value, iter)
        case .objectPath(let value): Self.appendString(TypeCode.objectPath, value.rawValue, iter)
        case .signature(let value): Self.appendString(TypeCode.signature, value, iter)
        case .bytes(let bytes): Self.appendBytes(bytes, to: iter)
        case .array(let elementSignature, let elements):
            Self.withContainer(iter, TypeCode.array, elementSignature) { sub in
                for element in elements { element.append(to: sub) }
            }
        case .dictionary(let keySignature, let valueSignature, let entries):
            Self.withContainer(iter, TypeCode.array, "{" + keySignature + valueSignature + "}") { sub in
                for entry in entries {
                    Self.withContainer(sub, TypeCode.dictEntry, nil) { pair in
                        entry.key.append(to: pair)
                        entry.value.append(to: pair)
                    }
                }
            }
        case .structure(let fields):
            Self.withContainer(iter, TypeCode.structure, nil) { sub in
                for field in fields { field.append(to: sub) }
            }
        case .variant(let inner):
            Self.withContainer(iter, TypeCode.variant, inner.signature) { sub in inner.append(to: sub) }
        }
    }

    private func appendBasic(_ type: Int32, _ basic: inout DBusBasicValue, _ iter: UnsafeMutablePointer<DBusMessageIter>) {
        let ok = dbus_message_iter_append_basic(iter, type, &basic)
        precondition(ok != 0, "out of memory appending a D-Bus value")
    }

    private static func appendString(_ type: Int32, _ string: String, _ iter: UnsafeMutablePointer<DBusMessageIter>) {
        string.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            let ok = dbus_message_iter_append_basic(iter, type, &pointer)
            precondition(ok != 0, "out of memory appending a D-Bus string")
        }
    }

    /// `ay` in one block copy.
    static func appendBytes(_ bytes: [UInt8], to iter: UnsafeMutablePointer<DBusMessageIter>) {
        bytes.withUnsafeBufferPointer { appendBytes($0, to: iter) }
    }

    /// `ay` in one block copy, with no Swift string for the element signature.
    static func appendBytes(_ buffer: UnsafeBufferPointer<UInt8>, to iter: UnsafeMutablePointer<DBusMessageIter>) {
        var sub = DBusMessageIter()
        precondition(dbus_message_iter_open_container(iter, TypeCode.array, byteSignature, &sub) != 0,
                     "out of memory opening a D-Bus container")
        if let base = buffer.baseAddress, !buffer.isEmpty {
            var pointer: UnsafePointer<UInt8>? = base
            let ok = dbus_message_iter_append_fixed_array(&sub, TypeCode.byte, &pointer, Int32(buffer.count))
            precondition(ok != 0, "out of memory appending a D-Bus byte array")
        }
        precondition(dbus_message_iter_close_container(iter, &sub) != 0, "out of memory closing a D-Bus container")
    }

    /// `"y"` as a C string that lives as long as the program.
    private static var byteSignature: UnsafePointer<CChar> {
        let text: StaticString = "y"
        return UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    static func withContainer(
        _ iter: UnsafeMutablePointer<DBusMessageIter>, _ type: Int32, _ contained: String?,
        _ body: (UnsafeMutablePointer<DBusMessageIter>) -> Void
    ) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let contained {
            opened = contained.withCString { dbus_message_iter_open_container(iter, type, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(iter, type, nil, &sub)
        }
        precondition(opened != 0, "out of memory opening a D-Bus container")
        body(&sub)
        precondition(dbus_message_iter_close_container(iter, &sub) != 0, "out of memory closing a D-Bus container")
    }

    // MARK: Decoding

    /// Decodes the value at `iter` (which must not be at the end).
    init(from iter: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) {
        let type = dbus_message_iter_get_arg_type(iter)
        var basic = DBusBasicValue()
        switch type {
        case TypeCode.byte: dbus_message_iter_get_basic(iter, &basic); self = .byte(basic.byt)
        case TypeCode.boolean: dbus_message_iter_get_basic(iter, &basic); self = .bool(basic.bool_val != 0)
        case TypeCode.int16: dbus_message_iter_get_basic(iter, &basic); self = .int16(basic.i16)
        case TypeCode.uint16: dbus_message_iter_get_basic(iter, &basic); self = .uint16(basic.u16)
        case TypeCode.int32: dbus_message_iter_get_basic(iter, &basic); self = .int32(basic.i32)
        case TypeCode.uint32: dbus_message_iter_get_basic(iter, &basic); self = .uint32(basic.u32)
        case TypeCode.int64: dbus_message_iter_get_basic(iter, &basic); self = .int64(Int64(basic.i64))
        case TypeCode.uint64: dbus_message_iter_get_basic(iter, &basic); self = .uint64(UInt64(basic.u64))
        case TypeCode.double: dbus_message_iter_get_basic(iter, &basic); self = .double(basic.dbl)
        case TypeCode.unixFD: dbus_message_iter_get_basic(iter, &basic); self = .unixFD(basic.fd)
        case TypeCode.string: self = .string(Self.decodeString(iter))
        case TypeCode.signature: self = .signature(Self.decodeString(iter))
        case TypeCode.objectPath:
            // No second check: libdbus validates every path of a message it loads, and
            // refuses invalid ones when a message is built.
            self = .objectPath(ObjectPath(unchecked: Self.decodeString(iter)))
        case TypeCode.array:
            self = try Self.decodeArray(iter)
        case TypeCode.structure:
            var fields: [DBusValue] = []
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(iter, &sub)
            while dbus_message_iter_get_arg_type(&sub) != TypeCode.invalid {
                fields.append(try DBusValue(from: &sub))
                dbus_message_iter_next(&sub)
            }
            self = .structure(fields)
        case TypeCode.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(iter, &sub)
            guard dbus_message_iter_get_arg_type(&sub) != TypeCode.invalid else { throw .invalidArgs("empty variant") }
            self = .variant(try DBusValue(from: &sub))
        default:
            throw .invalidArgs("unsupported D-Bus type code \(type)")
        }
    }

    private static func decodeString(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    private static func decodeArray(_ iter: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) -> DBusValue {
        let elementType = dbus_message_iter_get_element_type(iter)
        if elementType == TypeCode.byte { return .bytes(decodeBytes(iter)) }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(iter, &sub)
        guard let rawSignature = dbus_message_iter_get_signature(iter) else { throw .invalidArgs("no array signature") }
        let signature = String(cString: rawSignature)
        dbus_free(rawSignature)
        let element = String(signature.dropFirst())
        if elementType == TypeCode.dictEntry {
            let inner = element.utf8.dropFirst().dropLast()
            let keySignature = String(Substring(inner.prefix(1)))
            let valueSignature = String(Substring(inner.dropFirst()))
            var entries: [DBusDictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry {
                var pair = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &pair)
                let key = try DBusValue(from: &pair)
                guard dbus_message_iter_next(&pair) != 0 else { throw .invalidArgs("dictionary entry without value") }
                let value = try DBusValue(from: &pair)
                entries.append(DBusDictionaryEntry(key: key, value: value))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(keySignature: keySignature, valueSignature: valueSignature, entries)
        }
        var elements: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != TypeCode.invalid {
            elements.append(try DBusValue(from: &sub))
            dbus_message_iter_next(&sub)
        }
        return .array(elementSignature: element, elements)
    }
}
