// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc

/// A D-Bus message; owns one reference to a libdbus `DBusMessage` and drops it in `deinit`.
///
/// Header fields are read from libdbus on access (no copying at construction), so wrapping
/// an incoming message is one allocation.
public final class Message {
    /// The message's kind.
    public enum MessageType: Sendable, Equatable {
        case methodCall, methodReturn, error, signal, invalid
    }

    /// `DBusMessage*`.
    let raw: OpaquePointer

    /// Takes over a reference the caller owns.
    init(taking raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference to a message owned elsewhere.
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    public var type: MessageType {
        switch dbus_message_get_type(raw) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: return .methodCall
        case DBUS_MESSAGE_TYPE_METHOD_RETURN: return .methodReturn
        case DBUS_MESSAGE_TYPE_ERROR: return .error
        case DBUS_MESSAGE_TYPE_SIGNAL: return .signal
        default: return .invalid
        }
    }

    public var path: ObjectPath? { dbus_message_get_path(raw).map { ObjectPath(unchecked: String(cString: $0)) } }
    public var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    public var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    public var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    public var destination: String? { dbus_message_get_destination(raw).map { String(cString: $0) } }
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    /// Whether the sender is `uniqueName` (false for nil or a message without sender).
    public func isSent(by uniqueName: String?) -> Bool {
        guard let uniqueName, let sender = dbus_message_get_sender(raw) else { return false }
        return uniqueName.withCString { strcmp($0, sender) == 0 }
    }

    /// The body's signature ("" for an empty body).
    public var signature: String { dbus_message_get_signature(raw).map { String(cString: $0) } ?? "" }
    /// The serial assigned when the message was sent (0 before).
    public var serial: UInt32 { dbus_message_get_serial(raw) }
    /// For replies: the serial of the call answered.
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }

    /// The NO_REPLY_EXPECTED flag: the sender will not read a reply, so none may be sent.
    public var noReplyExpected: Bool {
        get { dbus_message_get_no_reply(raw) != 0 }
        set { dbus_message_set_no_reply(raw, newValue ? 1 : 0) }
    }

    /// Decodes the body.
    /// - Throws: `InvalidArgs` for a body that cannot be decoded.
    public func arguments() throws(DBusError) -> [DBusValue] {
        try DBusValue.decodeArguments(of: raw)
    }

    /// For an error message: the error it carries (`message` = first string argument).
    public var error: DBusError? {
        guard let name = errorName else { return nil }
        var text = ""
        var iter = DBusMessageIter()
        if dbus_message_iter_init(raw, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == TypeCode.string {
            var pointer: UnsafePointer<CChar>?
            dbus_message_iter_get_basic(&iter, &pointer)
            text = pointer.map { String(cString: $0) } ?? ""
        }
        return DBusError(name: name, message: text)
    }

    // MARK: Builders

    /// A method call. `destination` is a bus name (nil for peer-to-peer).
    /// - Throws: `InvalidArgs` for an invalid name or argument.
    public static func methodCall(
        destination: String?, path: ObjectPath, interface: String?, member: String, arguments: [DBusValue] = []
    ) throws(DBusError) -> Message {
        if let destination { try Names.validateBusName(destination) }
        if let interface { try Names.validateInterface(interface) }
        try Names.validateMember(member)
        let raw = dbus_message_new_method_call(destination, path.rawValue, interface, member)
        guard let raw else { throw DBusError(name: DBusError.Name.noMemory, message: "dbus_message_new_method_call") }
        let message = Message(taking: raw)
        try DBusValue.append(arguments, to: raw)
        return message
    }

    /// A signal.
    /// - Throws: `InvalidArgs` for an invalid name or argument.
    public static func signal(path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [])
        throws(DBusError) -> Message
    {
        try Names.validateInterface(interface)
        try Names.validateMember(member)
        guard let raw = dbus_message_new_signal(path.rawValue, interface, member) else {
            throw DBusError(name: DBusError.Name.noMemory, message: "dbus_message_new_signal")
        }
        let message = Message(taking: raw)
        try DBusValue.append(arguments, to: raw)
        return message
    }

    /// A method return answering `call`.
    static func methodReturn(replyingTo call: Message) -> Message {
        guard let raw = dbus_message_new_method_return(call.raw) else { preconditionFailure("out of memory") }
        return Message(taking: raw)
    }

    /// An error reply answering `call`; an invalid error name becomes `Failed`.
    static func errorReply(replyingTo call: Message, _ error: DBusError) -> Message {
        let valid = error.name.withCString { dbus_validate_error_name($0, nil) != 0 }
        let name = valid ? error.name : DBusError.Name.failed
        let text = (try? DBusValue.validateString(error.message)) != nil ? error.message : "(invalid message text)"
        guard let raw = dbus_message_new_error(call.raw, name, text) else { preconditionFailure("out of memory") }
        return Message(taking: raw)
    }
}
