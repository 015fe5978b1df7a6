// SPDX-License-Identifier: MIT

import BLEModel
import DBusKit
import DaemonCore
import Logging

/// A program's object that serves attributes (`RegisterHandler`), as DaemonCore's
/// `AttributeHandler`: each read or write becomes an asynchronous `org.gattd.Handler1`
/// call on the program's own unique name, bounded by the attribute's deadline.
///
/// - `Read(s id, a{sv} request) -> ay` and `Write(s id, ay value, a{sv} request)`;
///   `request` has `device` (o, bluetoothd's object: an opaque handle), `address` (s, the
///   central's `Address`: its identity once bonded) and `mtu` (q) when known, `offset` (q),
///   `link` (s) when known, and for writes `expects-reply` (b): false for a Write Command.
/// - An error reply named in `HandlerErrors` is the ATT result; any other error name is
///   0x0E (logged); no reply in time or a program gone from the bus is `.unavailable`
///   (the attribute's fallback); an answer of the wrong type (a Read not `ay`, a Write
///   with any value) is `.malformed`: refused, never served from the stored value.
final class ProgramHandler: AttributeHandler {
    static let interface = "org.gattd.Handler1"

    let sender: String
    let path: ObjectPath
    let connection: BusConnection
    let logger: Logger
    var name: String { "\(sender) \(path.rawValue)" }

    init(sender: String, path: ObjectPath, connection: BusConnection, logger: Logger) {
        self.sender = sender
        self.path = path
        self.connection = connection
        self.logger = logger
    }

    func read(
        _ attribute: Attribute, _ request: AttributeRequest, timeout: Duration,
        answer: @escaping (HandlerAnswer<[UInt8]>) -> Void
    ) {
        call("Read", [.string(attribute.id), Self.describe(request, write: false)], timeout) { [self] outcome in
            switch outcome {
            case .success(let reply):
                guard let arguments = try? reply.arguments(), arguments.count == 1, let bytes = arguments[0].asBytes else {
                    answer(.malformed(reason: "Read answered with (\(reply.signature)), not (ay)"))
                    return
                }
                answer(.answered(bytes))
            case .failure(let error):
                answer(mapped(error, attribute))
            }
        }
    }

    func write(
        _ attribute: Attribute, bytes: [UInt8], _ request: AttributeRequest, timeout: Duration,
        answer: @escaping (HandlerAnswer<Void>) -> Void
    ) {
        call("Write", [.string(attribute.id), .bytes(bytes), Self.describe(request, write: true)], timeout) {
            [self] outcome in
            switch outcome {
            case .success(let reply):
                // Write returns nothing; a value (say a boolean meant as a verdict) is not
                // an acceptance gattd may assume.
                guard reply.signature.isEmpty else {
                    answer(.malformed(reason: "Write answered with (\(reply.signature)), not ()"))
                    return
                }
                answer(.answered(()))
            case .failure(let error): answer(mapped(error, attribute))
            }
        }
    }

    private func call(
        _ member: String, _ arguments: [DBusValue], _ timeout: Duration,
        reply: @escaping (Result<Message, DBusError>) -> Void
    ) {
        connection.call(
            destination: sender, path: path, interface: Self.interface, member: member, arguments: arguments,
            timeout: timeout, reply: reply)
    }

    private func mapped<T>(_ error: DBusError, _ attribute: Attribute) -> HandlerAnswer<T> {
        if let gatt = HandlerErrors.gattError(named: error.name) { return .refused(gatt) }
        switch error.name {
        case DBusError.Name.noReply, DBusError.Name.serviceUnknown, DBusError.Name.disconnected,
            DBusError.Name.unknownObject, DBusError.Name.unknownMethod, DBusError.Name.unknownInterface,
            DBusError.Name.nameHasNoOwner, DBusError.Name.accessDenied:
            return .unavailable(reason: "\(error.name): \(error.message)")
        default:
            logger.warning(
                "handler answered with an error gattd does not know; answering 0x0e",
                metadata: ["gatt.id": "\(attribute.id)", "handler": "\(name)", "error": "\(error.name)"])
            return .refused(.unlikely)
        }
    }

    static func describe(_ request: AttributeRequest, write: Bool) -> DBusValue {
        var entries: [(String, DBusValue)] = [("offset", .uint16(UInt16(clamping: request.offset)))]
        if let device = request.device, let path = try? ObjectPath(device) { entries.append(("device", .objectPath(path))) }
        if let address = request.address { entries.append(("address", .string(address))) }
        if let mtu = request.mtu { entries.append(("mtu", .uint16(UInt16(clamping: mtu)))) }
        if let link = request.link { entries.append(("link", .string(link))) }
        if write { entries.append(("expects-reply", .bool(request.expectsReply))) }
        return .variantDictionary(entries)
    }
}
