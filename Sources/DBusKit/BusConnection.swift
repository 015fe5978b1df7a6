// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc
import Mainloop

/// A private libdbus connection to a message bus, driven by an `EventLoop`.
///
/// Not `Sendable`: it and every object exported on it live on the loop's thread. Incoming
/// messages are dispatched at the end of a loop turn (after all ready descriptors were
/// read); replies and outgoing messages are written immediately when the socket accepts
/// them and otherwise flushed through a write watch. There is no blocking API except the
/// `Hello` exchange inside `init`.
public final class BusConnection {
    /// `DBusConnection*`.
    let raw: OpaquePointer
    let glue: LoopGlue
    /// How calls and subscriptions hold the connection (`ConnectionAnchor`).
    let anchor = ConnectionAnchor()
    /// The loop the connection runs on.
    public let loop: EventLoop
    /// The unique name the bus assigned (`:1.42`).
    public let uniqueName: String
    /// Called once when the connection to the bus is lost.
    public var onDisconnected: (() -> Void)?
    /// False after the bus connection was lost.
    public private(set) var isConnected = true

    var objects: [String: ExportedObject] = [:]
    /// The object the previous call went to (cleared when it is unexported).
    var lastDispatched: ExportedObject?
    var exportSequence: UInt64 = 0
    var managedRoots: Set<ObjectPath> = []
    var subscriptions: [SignalSubscription] = []
    /// The last `ay` reply `sendBytesReply` built, unsent, for copying.
    private var bytesReplyTemplate: ReplyTemplate?
    /// Sees method returns and errors that matched no pending call (a peer answering a
    /// call that asked for no reply, or answering twice). For diagnostics and tests.
    public var onStrayReply: ((Message) -> Void)?

    /// Connects to the bus at `address` and registers (`Hello`, the one blocking exchange).
    /// - Throws: the libdbus error for an unreachable or refusing bus.
    public init(address: String, loop: EventLoop) throws(DBusError) {
        let raw = try withDBusError { dbus_connection_open_private(address, $0) }
        guard let raw else { throw .failed("dbus_connection_open_private returned nothing") }
        dbus_connection_set_exit_on_disconnect(raw, 0)
        do {
            _ = try withDBusError { dbus_bus_register(raw, $0) }
        } catch {
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            throw error
        }
        self.raw = raw
        self.loop = loop
        self.uniqueName = dbus_bus_get_unique_name(raw).map { String(cString: $0) } ?? ""
        self.glue = LoopGlue(loop: loop, connection: raw)
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_add_filter(raw, busFilter, me, nil)
        glue.install()
        anchor.connection = self
    }

    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` if set, else the standard socket).
    public static func system(loop: EventLoop) throws(DBusError) -> BusConnection {
        let address = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
            ?? "unix:path=/run/dbus/system_bus_socket"
        return try BusConnection(address: address, loop: loop)
    }

    deinit {
        anchor.connection = nil
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_remove_filter(raw, busFilter, me)
        glue.uninstall()
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    /// Whether messages may carry Unix file descriptors on this connection.
    public var canSendUnixFDs: Bool { dbus_connection_can_send_type(raw, TypeCode.unixFD) != 0 }

    /// Queues `message` for sending (written now if the socket accepts it).
    /// - Throws: `Failed` when disconnected or when it carries fds the connection cannot pass.
    public func send(_ message: Message) throws(DBusError) {
        guard isConnected else { throw DBusError(name: DBusError.Name.disconnected, message: "not connected") }
        if dbus_message_contains_unix_fds(message.raw) != 0, !canSendUnixFDs {
            throw .failed("connection cannot pass unix file descriptors")
        }
        guard dbus_connection_send(raw, message.raw, nil) != 0 else { throw .failed("dbus_connection_send failed") }
    }

    func sendReply(_ message: Message) {
        guard isConnected else { return }
        dbus_connection_send(raw, message.raw, nil)
    }

    /// Answers `call` with an empty method return (no `Message` wrapper on the way).
    func sendEmptyReply(to call: Message) {
        guard isConnected else { return }
        guard let reply = dbus_message_new_method_return(call.raw) else { preconditionFailure("out of memory") }
        dbus_connection_send(raw, reply, nil)
        dbus_message_unref(reply)
    }

    /// Answers `call` with a method return carrying `bytes` as one `ay`.
    ///
    /// The same bytes to the same caller as the previous such reply (bluetoothd reading a
    /// value again) go out as a copy of that reply with this call's serial: about 6,000
    /// instructions less than building it (BENCHMARKS.md, "The true ceiling").
    func sendBytesReply(to call: Message, _ bytes: UnsafeBufferPointer<UInt8>) {
        guard isConnected else { return }
        let sender = dbus_message_get_sender(call.raw)
        if let sender, let template = bytesReplyTemplate, template.matches(sender: sender, bytes: bytes),
            let reply = dbus_message_copy(template.raw)
        {
            guard dbus_message_set_reply_serial(reply, dbus_message_get_serial(call.raw)) != 0 else {
                preconditionFailure("out of memory")
            }
            dbus_connection_send(raw, reply, nil)
            dbus_message_unref(reply)
            return
        }
        guard let reply = dbus_message_new_method_return(call.raw) else { preconditionFailure("out of memory") }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(reply, &iter)
        DBusValue.appendBytes(bytes, to: &iter)
        // dbus_message_copy gives an unlocked copy with serial 0; send assigns each its own.
        if let sender, bytes.count <= ReplyTemplate.maximumBytes, let copy = dbus_message_copy(reply) {
            bytesReplyTemplate = ReplyTemplate(raw: copy, sender: sender, bytes: bytes)
        }
        dbus_connection_send(raw, reply, nil)
        dbus_message_unref(reply)
    }

    // MARK: Outgoing calls

    /// Calls a method; `reply` runs exactly once on the loop thread, never before this returns.
    ///
    /// An error reply arrives as `.failure` with its name and message; no reply within
    /// `timeout` (default: libdbus's 25 s) as `NoReply`; an invalid argument as `InvalidArgs`.
    public func call(
        destination: String?, path: ObjectPath, interface: String?, member: String,
        arguments: [DBusValue] = [], timeout: Duration? = nil,
        reply: @escaping (Result<Message, DBusError>) -> Void
    ) {
        let message: Message
        do {
            message = try Message.methodCall(
                destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        } catch {
            loop.afterIteration { reply(.failure(error)) }
            return
        }
        call(message, timeout: timeout, reply: reply)
    }

    /// Sends a prepared method call; see `call(destination:path:interface:member:arguments:timeout:reply:)`.
    public func call(_ message: Message, timeout: Duration? = nil, reply: @escaping (Result<Message, DBusError>) -> Void) {
        var milliseconds = DBUS_TIMEOUT_USE_DEFAULT
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            milliseconds = Int32(clamping: max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        }
        var pending: OpaquePointer?
        let sent = isConnected && dbus_connection_send_with_reply(raw, message.raw, &pending, milliseconds) != 0
        guard sent, let pending else {
            loop.afterIteration { reply(.failure(DBusError(name: DBusError.Name.disconnected, message: "not connected"))) }
            return
        }
        let box = Unmanaged.passRetained(PendingReply(reply)).toOpaque()
        dbus_pending_call_set_notify(pending, { pending, data in
            let box = Unmanaged<PendingReply>.fromOpaque(data!).takeUnretainedValue()
            let raw = dbus_pending_call_steal_reply(pending)
            box.deliver(raw)
            dbus_pending_call_unref(pending)
        }, box, { data in
            Unmanaged<PendingReply>.fromOpaque(data!).release()
        })
    }

    // MARK: Incoming

    fileprivate func filter(_ message: OpaquePointer) -> DBusHandlerResult {
        switch dbus_message_get_type(message) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL:
            return handleMethodCall(message)
        case DBUS_MESSAGE_TYPE_SIGNAL:
            if dbus_message_is_signal(message, Names.local, "Disconnected") != 0 {
                handleDisconnect()
                return DBUS_HANDLER_RESULT_HANDLED
            }
            if !subscriptions.isEmpty { routeSignal(message) }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR:
            onStrayReply?(Message(retaining: message))
            return DBUS_HANDLER_RESULT_HANDLED
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }

    private func handleDisconnect() {
        guard isConnected else { return }
        isConnected = false
        onDisconnected?()
    }
}

/// libdbus filter installed on every connection; `data` is the unretained `BusConnection`
/// (removed in its `deinit`, so it never outlives it).
private let busFilter: DBusHandleMessageFunction = { _, message, data in
    Unmanaged<BusConnection>.fromOpaque(data!).takeUnretainedValue().filter(message!)
}

/// The reply handler of one outgoing call, retained by libdbus until the call completes.
final class PendingReply {
    let handler: (Result<Message, DBusError>) -> Void

    init(_ handler: @escaping (Result<Message, DBusError>) -> Void) { self.handler = handler }

    func deliver(_ raw: OpaquePointer?) {
        guard let raw else {
            handler(.failure(DBusError(name: DBusError.Name.noReply, message: "no reply")))
            return
        }
        let message = Message(taking: raw)
        if let error = message.error {
            handler(.failure(error))
        } else {
            handler(.success(message))
        }
    }
}

/// A method return carrying one `ay`, kept unsent with the caller and bytes it answers, so
/// the same answer to the same caller is a copy (`BusConnection.sendBytesReply`).
final class ReplyTemplate {
    /// Longer values are built each time (comparing them would cost more than it saves).
    static let maximumBytes = 512
    /// `DBusMessage*`, owned; its reply serial is replaced in each copy.
    let raw: OpaquePointer
    let sender: UnsafeMutablePointer<CChar>
    let bytes: [UInt8]

    init(raw: OpaquePointer, sender: UnsafePointer<CChar>, bytes: UnsafeBufferPointer<UInt8>) {
        self.raw = raw
        self.sender = strdup(sender)
        self.bytes = Array(bytes)
    }

    deinit {
        dbus_message_unref(raw)
        free(sender)
    }

    func matches(sender callSender: UnsafePointer<CChar>, bytes callBytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == callBytes.count, strcmp(sender, callSender) == 0 else { return false }
        return bytes.withUnsafeBufferPointer { mine in
            mine.isEmpty || memcmp(mine.baseAddress!, callBytes.baseAddress!, mine.count) == 0
        }
    }
}
