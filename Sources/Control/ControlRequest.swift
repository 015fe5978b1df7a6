// SPDX-License-Identifier: MIT

public import DBusKit

/// A call to `org.gattd.Manager1`, decoded from its member name and arguments.
///
/// Dispatch has already checked the arguments against the declared signature; this is
/// the one place that still reads them, and it refuses anything else with
/// `InvalidArgs` naming the method rather than guessing (for example an empty id).
public enum ControlRequest: Equatable, Sendable {
    case listCharacteristics
    case getValue(id: String)
    case setValue(id: String, value: [UInt8])
    case setAdvertising(id: String, enabled: Bool)
    case setAdvertisementData(id: String, changes: String, persist: Bool)
    case getStatus
    case subscribe
    case unsubscribe
    /// A program's object at `object` claims `ids` (characteristics and descriptors).
    case registerHandler(object: ObjectPath, ids: [String])
    case unregisterHandler(object: ObjectPath)
    /// Open the pairing window for this many seconds (0: the configured length).
    case openPairing(seconds: Int)
    case listBonds
    /// Forget the bond with the central at this address (`AA:BB:CC:DD:EE:FF`).
    case removeBond(address: String)

    public init(member: String, arguments: [DBusValue]) throws(DBusError) {
        func expect(_ signature: String) throws(DBusError) {
            let actual = arguments.map(\.signature).joined()
            guard actual == signature else {
                throw .invalidArgs("\(member) takes (\(signature)), got (\(actual))")
            }
        }
        func id() -> String { arguments[0].asString ?? "" }
        switch member {
        case "ListCharacteristics":
            try expect("")
            self = .listCharacteristics
        case "GetValue":
            try expect("s")
            self = .getValue(id: id())
        case "SetValue":
            try expect("say")
            self = .setValue(id: id(), value: arguments[1].asBytes ?? [])
        case "StartAdvertising", "StopAdvertising":
            try expect("s")
            self = .setAdvertising(id: id(), enabled: member == "StartAdvertising")
        case "SetAdvertisementData":
            try expect("ssb")
            self = .setAdvertisementData(id: id(), changes: arguments[1].asString ?? "", persist: arguments[2].asBool ?? false)
        case "GetStatus":
            try expect("")
            self = .getStatus
        case "Subscribe":
            try expect("")
            self = .subscribe
        case "Unsubscribe":
            try expect("")
            self = .unsubscribe
        case "RegisterHandler":
            try expect("oasa{sv}")
            guard let object = arguments[0].asObjectPath, let ids = arguments[1].asStringArray else {
                throw .invalidArgs("RegisterHandler takes (oasa{sv})")
            }
            guard !ids.isEmpty else { throw .invalidArgs("RegisterHandler: name at least one id") }
            if let key = arguments[2].variantDictionaryEntries?.first?.0 {
                throw .invalidArgs("RegisterHandler: unknown option \"\(key)\" (none are defined yet)")
            }
            self = .registerHandler(object: object, ids: ids)
        case "UnregisterHandler":
            try expect("o")
            guard let object = arguments[0].asObjectPath else { throw .invalidArgs("UnregisterHandler takes (o)") }
            self = .unregisterHandler(object: object)
        case "OpenPairing":
            try expect("u")
            let seconds = arguments[0].asUInt32 ?? 0
            guard seconds <= 86_400 else { throw .invalidArgs("OpenPairing: at most 86400 seconds, got \(seconds)") }
            self = .openPairing(seconds: Int(seconds))
        case "ListBonds":
            try expect("")
            self = .listBonds
        case "RemoveBond":
            try expect("s")
            let address = id()
            guard Self.isAddress(address) else {
                throw .invalidArgs("RemoveBond: \"\(address)\" is not an address like AA:BB:CC:DD:EE:FF")
            }
            self = .removeBond(address: address.uppercased())
        default:
            throw .unknownMethod("no method \(member)")
        }
    }

    /// `AA:BB:CC:DD:EE:FF`, hex digits of either case.
    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6
            && parts.allSatisfy { part in
                part.utf8.count == 2
                    && part.utf8.allSatisfy { byte in
                        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
                    }
            }
    }
}
