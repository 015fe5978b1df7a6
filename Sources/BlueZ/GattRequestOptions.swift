// SPDX-License-Identifier: MIT

internal import DBusKit
internal import DaemonCore

/// The `a{sv}` options bluetoothd sends with `ReadValue`/`WriteValue`
/// (`append_options` in gatt-database.c, docs/bluez-contract.md §2).
///
/// `offset` is present only when non-zero; `type` is never sent by the server side but
/// is accepted because the documented API lists it. Any other key, or a known key with
/// the wrong type, is refused with `org.bluez.Error.InvalidArguments` naming it.
struct GattRequestOptions: Equatable {
    var device: String?
    var offset: Int = 0
    var mtu: Int?
    var link: String?
    var prepareAuthorize = false

    init() {}

    init(_ value: DBusValue, method: String) throws(DBusError) {
        guard let entries = value.variantDictionaryEntries else {
            throw BlueZError.invalidArguments("\(method): options must be a{sv}")
        }
        try self.init(entries: entries, method: method)
    }

    /// From the (key, variant content) pairs of the options argument, as
    /// `MethodCall.variantDictionaryArgument(at:)` decodes them.
    init(entries: [(String, DBusValue)], method: String) throws(DBusError) {
        for (key, variant) in entries { try apply(key, variant, method: method) }
    }

    /// From argument `index` of a call (declared `a{sv}`): the ReadValue/WriteValue hot
    /// path. bluetoothd's own options (`device`, `mtu`, `link`, `offset` with their types)
    /// are read from the message's wire bytes, `device` and `link` being `previousDevice`
    /// and `previousLink` themselves when equal (a repeated read makes no new string);
    /// anything else makes the whole argument go the generic way, through `apply`, and be
    /// accepted or refused as there.
    init(
        _ message: Message, argument index: Int, method: String, previousDevice: String? = nil,
        previousLink: String? = nil
    ) throws(DBusError) {
        var fast = GattRequestOptions()
        if message.forEachWireVariantEntry(at: index, { entry in
            fast.applyWire(entry, previousDevice: previousDevice, previousLink: previousLink)
        }) {
            self = fast
            return
        }
        try message.forEachVariantDictionaryEntry(at: index) { key, variant throws(DBusError) in
            try apply(key, variant, method: method)
        }
    }

    /// `apply` for bluetoothd's options with their types, read from the wire bytes; false:
    /// not one of them (the caller starts over the generic way).
    private mutating func applyWire(
        _ entry: borrowing WireVariantEntry, previousDevice: String?, previousLink: String?
    ) -> Bool {
        if entry.keyIs("device"), let path = entry.objectPath(reusing: previousDevice) {
            device = path
        } else if entry.keyIs("mtu"), let number = entry.uint16 {
            mtu = Int(number)
        } else if entry.keyIs("link"), let text = entry.string(reusing: previousLink) {
            link = text
        } else if entry.keyIs("offset"), let number = entry.uint16 {
            offset = Int(number)
        } else {
            return false
        }
        return true
    }

    private mutating func apply(_ key: String, _ variant: DBusValue, method: String) throws(DBusError) {
        switch key {
        case "device":
            guard let path = variant.asObjectPath else { throw Self.wrongType(method, key, "o") }
            device = path.rawValue
        case "offset":
            guard let number = variant.asUInt16 else { throw Self.wrongType(method, key, "q") }
            offset = Int(number)
        case "mtu":
            guard let number = variant.asUInt16 else { throw Self.wrongType(method, key, "q") }
            mtu = Int(number)
        case "link":
            guard let text = variant.asString else { throw Self.wrongType(method, key, "s") }
            link = text
        case "prepare-authorize":
            guard let flag = variant.asBool else { throw Self.wrongType(method, key, "b") }
            prepareAuthorize = flag
        case "type":
            guard variant.asString != nil else { throw Self.wrongType(method, key, "s") }
        default:
            throw BlueZError.invalidArguments("\(method): unknown option \"\(key)\"")
        }
    }

    /// The request DaemonCore works with: these options, from a central, answered unless
    /// the call is flagged NO_REPLY_EXPECTED (a Write Command).
    func request(_ call: MethodCall) -> AttributeRequest {
        AttributeRequest(
            caller: .central, device: device, offset: offset, mtu: mtu, link: link,
            prepareAuthorize: prepareAuthorize, expectsReply: !call.noReplyExpected)
    }

    private static func wrongType(_ method: String, _ key: String, _ signature: String) -> DBusError {
        BlueZError.invalidArguments("\(method): option \"\(key)\" must be of type \(signature)")
    }
}
