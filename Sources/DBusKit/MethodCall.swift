// SPDX-License-Identifier: MIT

/// An incoming method call handed to `DBusObject.handle(_:)`; answer it exactly once.
///
/// Keep it to answer later (deferred reply). If the caller set NO_REPLY_EXPECTED,
/// `reply` and `fail` send nothing (bluetoothd sends StartNotify, StopNotify, Confirm
/// and Release that way, and the system bus logs a denial for an unexpected reply).
/// Answering twice is a programmer error. A call dropped unanswered is answered with
/// `Failed` so the caller is not left waiting for its timeout.
public final class MethodCall {
    /// The call message.
    public let message: Message
    weak var connection: BusConnection?
    private var answered = false

    init(message: Message, connection: BusConnection) {
        self.message = message
        self.connection = connection
    }

    deinit {
        if !answered, !message.noReplyExpected {
            connection?.sendReply(Message.errorReply(
                replyingTo: message, .failed("\(message.member ?? "call") was not answered")))
        }
    }

    public var sender: String? { message.sender }
    public var path: ObjectPath? { message.path }
    public var interface: String? { message.interface }
    public var member: String? { message.member }
    public var noReplyExpected: Bool { message.noReplyExpected }
    /// Whether `reply` or `fail` has been called.
    public var isAnswered: Bool { answered }

    /// Decodes the arguments (already checked against the declared signature).
    public func arguments() throws(DBusError) -> [DBusValue] { try message.arguments() }

    /// Sends a method return with `values`. If they cannot be marshalled, sends `Failed`.
    public func reply(_ values: [DBusValue] = []) {
        precondition(!answered, "method call answered twice")
        answered = true
        guard !message.noReplyExpected, let connection else { return }
        let reply = Message.methodReturn(replyingTo: message)
        do {
            try DBusValue.append(values, to: reply.raw)
            connection.sendReply(reply)
        } catch {
            connection.sendReply(Message.errorReply(replyingTo: message, .failed("reply not representable: \(error.message)")))
        }
    }

    /// Sends an error reply.
    public func fail(_ error: DBusError) {
        precondition(!answered, "method call answered twice")
        answered = true
        guard !message.noReplyExpected, let connection else { return }
        connection.sendReply(Message.errorReply(replyingTo: message, error))
    }
}
