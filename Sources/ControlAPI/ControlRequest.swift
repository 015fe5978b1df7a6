// SPDX-License-Identifier: MIT

public import DBusKit

/// A call to `org.gattd.Manager1`, decoded from its member name and arguments.
///
/// `methods` is the API's one list: each row names a method, its signatures and how its
/// arguments (already checked against the signature by dispatch) become a request; a value
/// the signature cannot rule out is refused with `InvalidArgs` naming the method rather
/// than guessed at (for example an empty id).
public enum ControlRequest: Equatable, Sendable {
    case listCharacteristics
    case getValue(id: String)
    case setValue(id: String, value: [UInt8])
    /// `SetValueWithOptions`: with `centrals` (addresses, upper case), the value goes to
    /// those centrals only and is not stored; without, it is `setValue`.
    case setValueWithOptions(id: String, value: [UInt8], centrals: [String]?)
    case setAdvertising(id: String, enabled: Bool)
    case setAdvertisementData(id: String, changes: String, persist: Bool)
    case getStatus
    case subscribe
    case unsubscribe
    /// A program's object at `object` claims `operations` of `ids` (characteristics and
    /// descriptors).
    case registerHandler(object: ObjectPath, ids: [String], operations: Set<ControlHandlerOperation>)
    case unregisterHandler(object: ObjectPath)
    /// Open the pairing window for this many seconds (0: the configured length).
    case openPairing(seconds: Int)
    /// Numeric comparison: accept or reject the pending confirmation of the central at
    /// this address (nil: the only one pending).
    case decidePairing(address: String?, accept: Bool)
    case listBonds
    /// Forget the bond with the central at this address (`AA:BB:CC:DD:EE:FF`).
    case removeBond(address: String)
    case listCentrals
    /// Drop the link to the connected central at this address.
    case disconnectCentral(address: String)
    /// The caller's object at `object` takes the channels a central opens on `channel`
    /// (`org.gattd.ChannelTaker1.Open`), until `UnregisterChannel` or it leaves the bus.
    case registerChannel(channel: String, object: ObjectPath)
    case unregisterChannel(channel: String)
    case listChannels

    /// One method of `org.gattd.Manager1`, written once: its name, its signatures, and how
    /// its arguments become a request. `ControlManager`'s interface is made from these rows.
    public struct Method: Sendable {
        public let method: ControlMethod
        /// The member name, `method`'s spelling.
        public var name: String { method.rawValue }
        public let inSignature: String
        public let outSignature: String
        /// The request the arguments make; they already have `inSignature`. Throws
        /// `InvalidArgs` naming the method for a value the signature cannot rule out.
        public let decode: @Sendable ([DBusValue]) throws(DBusError) -> ControlRequest

        init(
            _ method: ControlMethod, in inSignature: String = "", out outSignature: String = "",
            _ decode: @escaping @Sendable ([DBusValue]) throws(DBusError) -> ControlRequest
        ) {
            self.method = method
            self.inSignature = inSignature
            self.outSignature = outSignature
            self.decode = decode
        }
    }

    /// The control API's methods, in the order introspection lists them (docs/control-api.md).
    public static let methods: [Method] = [
        Method(.listCharacteristics, out: "aa{sv}") { _ in .listCharacteristics },
        Method(.getValue, in: "s", out: "ay") { .getValue(id: id($0)) },
        Method(.setValue, in: "say") { .setValue(id: id($0), value: $0[1].asBytes ?? []) },
        Method(.setValueWithOptions, in: "saya{sv}") { arguments throws(DBusError) in
            var centrals: [String]?
            for (key, value) in arguments[2].variantDictionaryEntries ?? [] {
                guard key == ControlKey.centrals.rawValue else {
                    throw .invalidArgs("SetValueWithOptions: unknown option \"\(key)\" (known: centrals)")
                }
                guard let addresses = value.asStringArray else {
                    throw .invalidArgs("SetValueWithOptions: option centrals takes an array of strings (as)")
                }
                centrals = try ControlRequest.addresses(addresses, method: "SetValueWithOptions", option: "centrals")
            }
            return .setValueWithOptions(id: id(arguments), value: arguments[1].asBytes ?? [], centrals: centrals)
        },
        Method(.startAdvertising, in: "s") { .setAdvertising(id: id($0), enabled: true) },
        Method(.stopAdvertising, in: "s") { .setAdvertising(id: id($0), enabled: false) },
        Method(.setAdvertisementData, in: "ssb") {
            .setAdvertisementData(id: id($0), changes: $0[1].asString ?? "", persist: $0[2].asBool ?? false)
        },
        Method(.getStatus, out: "a{sv}") { _ in .getStatus },
        Method(.subscribe) { _ in .subscribe },
        Method(.unsubscribe) { _ in .unsubscribe },
        Method(.registerHandler, in: "oasa{sv}") { arguments throws(DBusError) in
            guard let object = arguments[0].asObjectPath, let ids = arguments[1].asStringArray else {
                throw .invalidArgs("RegisterHandler takes (oasa{sv})")
            }
            guard !ids.isEmpty else { throw .invalidArgs("RegisterHandler: name at least one id") }
            var operations = ControlHandlerOperation.all
            for (key, value) in arguments[2].variantDictionaryEntries ?? [] {
                guard key == ControlKey.operations.rawValue else {
                    throw .invalidArgs(
                        "RegisterHandler: unknown option \"\(key)\" (known: \(ControlKey.operations.rawValue))")
                }
                operations = try handlerOperations(value)
            }
            return .registerHandler(object: object, ids: ids, operations: operations)
        },
        Method(.unregisterHandler, in: "o") { arguments throws(DBusError) in
            guard let object = arguments[0].asObjectPath else { throw .invalidArgs("UnregisterHandler takes (o)") }
            return .unregisterHandler(object: object)
        },
        Method(.openPairing, in: "u", out: "u") { arguments throws(DBusError) in
            let seconds = arguments[0].asUInt32 ?? 0
            guard seconds <= 86_400 else { throw .invalidArgs("OpenPairing: at most 86400 seconds, got \(seconds)") }
            return .openPairing(seconds: Int(seconds))
        },
        Method(.confirmPairing, in: "s") { arguments throws(DBusError) in
            .decidePairing(address: try pendingAddress(arguments, method: "ConfirmPairing"), accept: true)
        },
        Method(.rejectPairing, in: "s") { arguments throws(DBusError) in
            .decidePairing(address: try pendingAddress(arguments, method: "RejectPairing"), accept: false)
        },
        Method(.listBonds, out: "aa{sv}") { _ in .listBonds },
        Method(.listCentrals, out: "aa{sv}") { _ in .listCentrals },
        Method(.disconnectCentral, in: "s") { arguments throws(DBusError) in
            let address = id(arguments)
            guard isAddress(address) else {
                throw .invalidArgs("DisconnectCentral: \"\(address)\" is not an address like AA:BB:CC:DD:EE:FF")
            }
            return .disconnectCentral(address: address.uppercased())
        },
        Method(.registerChannel, in: "so") { arguments throws(DBusError) in
            guard let object = arguments[1].asObjectPath else { throw .invalidArgs("RegisterChannel takes (so)") }
            let channel = id(arguments)
            guard !channel.isEmpty else { throw .invalidArgs("RegisterChannel: name a channel") }
            return .registerChannel(channel: channel, object: object)
        },
        Method(.unregisterChannel, in: "s") { arguments throws(DBusError) in
            let channel = id(arguments)
            guard !channel.isEmpty else { throw .invalidArgs("UnregisterChannel: name a channel") }
            return .unregisterChannel(channel: channel)
        },
        Method(.listChannels, out: "aa{sv}") { _ in .listChannels },
        Method(.removeBond, in: "s") { arguments throws(DBusError) in
            let address = id(arguments)
            guard isAddress(address) else {
                throw .invalidArgs("RemoveBond: \"\(address)\" is not an address like AA:BB:CC:DD:EE:FF")
            }
            return .removeBond(address: address.uppercased())
        },
    ]

    /// Decodes a call made outside D-Bus dispatch (tests, tools): the member is looked up
    /// in `methods` and the arguments checked against its signature, as dispatch checks them.
    public init(member: String, arguments: [DBusValue]) throws(DBusError) {
        guard let method = Self.methods.first(where: { $0.name == member }) else {
            throw .unknownMethod("no method \(member)")
        }
        let actual = arguments.map(\.signature).joined()
        guard actual == method.inSignature else {
            throw .invalidArgs("\(member) takes (\(method.inSignature)), got (\(actual))")
        }
        self = try method.decode(arguments)
    }

    /// The address of `ConfirmPairing`/`RejectPairing`: empty means the only one pending.
    private static func pendingAddress(_ arguments: [DBusValue], method: String) throws(DBusError) -> String? {
        let address = id(arguments)
        guard !address.isEmpty else { return nil }
        guard isAddress(address) else {
            throw .invalidArgs("\(method): \"\(address)\" is not an address like AA:BB:CC:DD:EE:FF (or \"\")")
        }
        return address.uppercased()
    }

    /// `RegisterHandler`'s `operations` (`as`): a non-empty list of `read` and `write`.
    static func handlerOperations(_ value: DBusValue) throws(DBusError) -> Set<ControlHandlerOperation> {
        let known = ControlHandlerOperation.allCases.map(\.rawValue).joined(separator: ", ")
        guard let names = value.asStringArray, !names.isEmpty else {
            throw .invalidArgs(
                "RegisterHandler: option \(ControlKey.operations.rawValue) takes a non-empty array of strings (as): "
                    + known)
        }
        var operations: Set<ControlHandlerOperation> = []
        for name in names {
            guard let operation = ControlHandlerOperation(rawValue: name) else {
                throw .invalidArgs("RegisterHandler: unknown operation \"\(name)\" (\(known))")
            }
            operations.insert(operation)
        }
        return operations
    }

    /// The first argument, an id (or an address).
    private static func id(_ arguments: [DBusValue]) -> String { arguments[0].asString ?? "" }

    /// Addresses named in `option` of `method`: at least one, each an address (upper-cased,
    /// duplicates dropped); else `InvalidArgs` naming the first bad one.
    static func addresses(_ texts: [String], method: String, option: String) throws(DBusError) -> [String] {
        guard !texts.isEmpty else { throw .invalidArgs("\(method): option \(option) names no central") }
        var seen: [String] = []
        for text in texts {
            guard isAddress(text) else {
                throw .invalidArgs("\(method): \(option): \"\(text)\" is not an address like AA:BB:CC:DD:EE:FF")
            }
            if !seen.contains(text.uppercased()) { seen.append(text.uppercased()) }
        }
        return seen
    }

    /// `AA:BB:CC:DD:EE:FF`, ASCII hex digits of either case: the one address check, the
    /// daemon's and gattctl's.
    public static func isAddress(_ text: String) -> Bool {
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
