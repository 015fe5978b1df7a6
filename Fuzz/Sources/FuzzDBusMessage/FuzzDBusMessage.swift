// SPDX-License-Identifier: MIT
//
// D-Bus message bodies as gattd reads them. An input is one byte N, N bytes of signature,
// then the body; the target wraps them in a method call header and hands the whole to
// libdbus's `dbus_message_demarshal`, which validates it as it would a message off the
// bus. What libdbus accepts then goes through everything gattd reads bodies with:
// - `Message.arguments()`; the decoded values appended to a new message give the same
//   body bytes (nothing lost or changed in either direction);
// - the typed fast paths (`variantDictionary(at:)`, `bytes(at:)`) agree with the
//   generic decoder for every argument;
// - every typed accessor on every value, `GattRequestOptions` from each `a{sv}` (all its
//   readers agree, the wire-bytes one of the hot path included), and `ControlRequest` for
//   each org.gattd.Manager1 method.
import CDBus
import ControlAPI
import FuzzSupport
import Glibc
@testable import BlueZ
@testable import DBusKit

@_cdecl("FuzzDBusMessage_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, testOneInput)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    fuzzDBusMessage(fuzzBytes(data, size))
}

func fuzzDBusMessage(_ bytes: [UInt8]) -> Int32 {
    let input = bytes
    guard let length = input.first.map(Int.init), input.count > length else { return 0 }
    let signature = Array(input[1..<(1 + length)])
    let body = Array(input[(1 + length)...])
    guard signature.allSatisfy({ $0 != 0 }) else { return 0 }
    let wire = methodCallHeader(signature: signature, bodyLength: body.count) + body
    var error = DBusError_C()
    let raw = wire.withUnsafeBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { dbus_message_demarshal($0.baseAddress, Int32($0.count), &error.raw) }
    }
    if raw == nil, getenv("FUZZ_DEBUG") != nil { print("demarshal:", String(cString: error.raw.message)) }
    error.free()
    guard let raw else { return 0 }
    check(Message(taking: raw), body: body)
    return 0
}

private func check(_ message: Message, body: [UInt8]) {
    let arguments: [DBusValue]
    do {
        arguments = try message.arguments()
    } catch {
        return
    }
    // Round trip: the decoded values, appended again, are the same bytes.
    if !arguments.contains(where: containsUnixFD) {
        let copy = Message(taking: dbus_message_new_method_call(nil, "/", nil, "M")!)
        do {
            try DBusValue.append(arguments, to: copy.raw)
        } catch {
            preconditionFailure("decoded values do not append again: \(error.message)")
        }
        precondition(bodyBytes(copy) == body, "decode + append changed the body")
    }
    for (index, argument) in arguments.enumerated() {
        exerciseAccessors(argument)
        let dictionary = try? message.variantDictionary(at: index)
        if let entries = argument.variantDictionaryEntries {
            precondition(dictionary.map { same($0, entries) } == true, "variantDictionary(at:) differs from arguments()")
            let fromValue = Result { () throws(DBusKit.DBusError) in try GattRequestOptions(argument, method: "ReadValue") }
            let fromEntries = Result { () throws(DBusKit.DBusError) in try GattRequestOptions(entries: entries, method: "ReadValue") }
            precondition(fromValue == fromEntries, "GattRequestOptions differs between its two readers")
            // The hot path's reader (the message's wire bytes, else the generic reader), with
            // and without a previous request's device and link to reuse.
            for previous in [nil, "/org/bluez/hci0/dev_00_11_22_33_44_55"] {
                let inPlace = Result { () throws(DBusKit.DBusError) in
                    try GattRequestOptions(
                        message, argument: index, method: "ReadValue", previousDevice: previous,
                        previousLink: previous.map { _ in "LE" })
                }
                precondition(inPlace == fromEntries, "GattRequestOptions from the message differs from the entries")
            }
        } else {
            precondition(dictionary == nil, "variantDictionary(at:) accepted a \(argument.signature)")
        }
        let bytes = try? message.bytes(at: index)
        precondition(bytes == argument.asBytes.flatMap { argument.signature == "ay" ? $0 : nil }, "bytes(at:) differs")
    }
    for member in [
        "ListCharacteristics", "GetValue", "SetValue", "StartAdvertising", "StopAdvertising", "GetStatus",
        "Subscribe", "Unsubscribe", "Other",
    ] {
        _ = try? ControlRequest(member: member, arguments: arguments)
    }
}

private func exerciseAccessors(_ value: DBusValue) {
    _ = value.unwrappedVariant
    _ = value.asString
    _ = value.asObjectPath
    _ = value.asBool
    _ = value.asByte
    _ = value.asUInt16
    _ = value.asInt16
    _ = value.asUInt32
    _ = value.asInt32
    _ = value.asBytes
    _ = value.asStringArray
    _ = value.asObjectPathArray
    _ = value.dictionaryEntries
    _ = value.variantDictionaryValue("UUID")
    if let entries = value.variantDictionaryEntries {
        for (_, inner) in entries { exerciseAccessors(inner) }
    }
    for element in value.asArray ?? [] { exerciseAccessors(element) }
    switch value {
    case .variant(let inner): exerciseAccessors(inner)
    case .structure(let fields): fields.forEach(exerciseAccessors)
    case .dictionary(_, _, let entries):
        for entry in entries {
            exerciseAccessors(entry.key)
            exerciseAccessors(entry.value)
        }
    default: break
    }
}

private func containsUnixFD(_ value: DBusValue) -> Bool {
    switch value {
    case .unixFD: true
    case .variant(let inner): containsUnixFD(inner)
    case .structure(let fields), .array(_, let fields): fields.contains(where: containsUnixFD)
    case .dictionary(_, _, let entries): entries.contains { containsUnixFD($0.key) || containsUnixFD($0.value) }
    default: false
    }
}

/// Equality with doubles compared bit for bit (a NaN equals itself).
private func same(_ a: [(String, DBusValue)], _ b: [(String, DBusValue)]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && same($0.1, $1.1) }
}

private func same(_ a: DBusValue, _ b: DBusValue) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
    case (.variant(let x), .variant(let y)): same(x, y)
    case (.structure(let x), .structure(let y)), (.array(_, let x), .array(_, let y)):
        a.signature == b.signature && x.count == y.count && zip(x, y).allSatisfy(same)
    case (.dictionary(_, _, let x), .dictionary(_, _, let y)):
        a.signature == b.signature && x.count == y.count
            && zip(x, y).allSatisfy { same($0.key, $1.key) && same($0.value, $1.value) }
    default: a == b
    }
}

private func bodyBytes(_ message: Message) -> [UInt8] {
    dbus_message_set_serial(message.raw, 1)
    var buffer: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    precondition(dbus_message_marshal(message.raw, &buffer, &length) != 0, "out of memory")
    defer { dbus_free(buffer) }
    let all = UnsafeRawBufferPointer(start: buffer, count: Int(length))
    let bodyLength = Int(all.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian)
    return Array(all[(all.count - bodyLength)...])
}

/// A little-endian method call header (serial 1, path "/", member "M") for a body of
/// `bodyLength` bytes with `signature`, padded so that the body follows.
func methodCallHeader(signature: [UInt8], bodyLength: Int) -> [UInt8] {
    var out: [UInt8] = [UInt8(ascii: "l"), 1, 0, 1]
    func u32(_ value: Int, into bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: value).littleEndian) { bytes += $0 }
    }
    u32(bodyLength, into: &out)
    u32(1, into: &out)
    var fields: [UInt8] = []
    func pad(_ alignment: Int) { while (16 + fields.count) % alignment != 0 { fields.append(0) } }
    pad(8)
    fields += [1, 1, UInt8(ascii: "o"), 0]
    pad(4)
    u32(1, into: &fields)
    fields += [UInt8(ascii: "/"), 0]
    pad(8)
    fields += [3, 1, UInt8(ascii: "s"), 0]
    pad(4)
    u32(1, into: &fields)
    fields += [UInt8(ascii: "M"), 0]
    if !signature.isEmpty {
        pad(8)
        fields += [8, 1, UInt8(ascii: "g"), 0, UInt8(signature.count)] + signature + [0]
    }
    u32(fields.count, into: &out)
    out += fields
    while out.count % 8 != 0 { out.append(0) }
    return out
}

/// A libdbus `DBusError`, freed once.
private struct DBusError_C {
    var raw = CDBus.DBusError()
    init() { dbus_error_init(&raw) }
    mutating func free() { dbus_error_free(&raw) }
}
