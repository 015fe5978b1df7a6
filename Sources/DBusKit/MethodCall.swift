// SPDX-License-Identifier: MIT

/// An incoming method call handed to its method row's handler (or `DBusObject.handle(_:)`);
/// answer it exactly once.
///
/// Keep it to answer later (deferred reply). If the caller set NO_REPLY_EXPECTED,
/// `reply` and `fail` send nothing (bluetoothd sends StartNotify, StopNotify, Confirm
/// and Release that way, and the system bus logs a denial for an unexpected reply).
/// Answering twice is a programmer error. A call dropped unanswered is answered with
/// `Failed` so the caller is not left waiting for its timeout.
public final class MethodCall {
    /// The call message.
    public let message: Message
    private let anchor: ConnectionAnchor
    /// The connection the call came in on; nil once it is gone.
    var connection: BusConnection? { anchor.connection }
    private var answered = false
    /// The member as dispatch matched it, so handlers need not copy it out of the message.
    private let methodName: String?

    init(message: Message, connection: BusConnection, methodName: String? = nil) {
        self.message = message
        self.anchor = connection.anchor
        self.methodName = methodName
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
    /// The method's name (read from the message only when dispatch did not record it).
    public var member: String? { methodName ?? message.member }
    public var noReplyExpected: Bool { message.noReplyExpected }
    /// Whether `reply` or `fail` has been called.
    public var isAnswered: Bool { answered }

    /// Whether the call came from the connection with unique name `uniqueName` (false for
    /// nil). Compares against the message's sender without copying it into a `String`.
    public func isSent(by uniqueName: String?) -> Bool { message.isSent(by: uniqueName) }

    /// Decodes the arguments (already checked against the declared signature).
    public func arguments() throws(DBusError) -> [DBusValue] { try message.arguments() }

    /// Argument `index`, an `a{sv}`, as (key, variant content) pairs; see `Message.variantDictionary(at:)`.
    public func variantDictionaryArgument(at index: Int) throws(DBusError) -> [(String, DBusValue)] {
        try message.variantDictionary(at: index)
    }

    /// Each (key, variant content) pair of argument `index`, an `a{sv}`, handed to `body`;
    /// see `Message.forEachVariantDictionaryEntry(at:_:)`.
    public func forEachVariantDictionaryEntry(
        at index: Int, _ body: (String, DBusValue) throws(DBusError) -> Void
    ) throws(DBusError) {
        try message.forEachVariantDictionaryEntry(at: index, body)
    }

    /// Argument `index`, an `ay`; see `Message.bytes(at:)`.
    public func bytesArgument(at index: Int) throws(DBusError) -> [UInt8] { try message.bytes(at: index) }

    /// Sends a method return with `values`. If they cannot be marshalled, sends `Failed`.
    public func reply(_ values: [DBusValue] = []) {
        precondition(!answered, "method call answered twice")
        answered = true
        guard !message.noReplyExpected, let connection else { return }
        if values.isEmpty {
            connection.sendEmptyReply(to: message)
            return
        }
        let reply = Message.methodReturn(replyingTo: message)
        do {
            try DBusValue.append(values, to: reply.raw)
            connection.sendReply(reply)
        } catch {
            connection.sendReply(Message.errorReply(replyingTo: message, .failed("reply not representable: \(error.message)")))
        }
    }

    /// Sends a method return carrying one `ay`: what `reply([.bytes(Array(bytes))])` sends,
    /// without the copy (bytes cannot be unrepresentable, so there is nothing to check).
    public func reply(bytes: ArraySlice<UInt8>) {
        precondition(!answered, "method call answered twice")
        answered = true
        guard !message.noReplyExpected, let connection else { return }
        bytes.withUnsafeBufferPointer { connection.sendBytesReply(to: message, $0) }
    }

    /// Sends a method return carrying one `ay`; see `reply(bytes:)` for a slice.
    public func reply(bytes: [UInt8]) { reply(bytes: bytes[...]) }

    /// Sends an error reply.
    public func fail(_ error: DBusError) {
        precondition(!answered, "method call answered twice")
        answered = true
        guard !message.noReplyExpected, let connection else { return }
        connection.sendReply(Message.errorReply(replyingTo: message, error))
    }
}
