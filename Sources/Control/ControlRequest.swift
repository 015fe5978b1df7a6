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
    case getStatus
    case subscribe
    case unsubscribe

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
        case "GetStatus":
            try expect("")
            self = .getStatus
        case "Subscribe":
            try expect("")
            self = .subscribe
        case "Unsubscribe":
            try expect("")
            self = .unsubscribe
        default:
            throw .unknownMethod("no method \(member)")
        }
    }
}
