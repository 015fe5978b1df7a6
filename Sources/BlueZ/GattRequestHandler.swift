// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore
internal import Logging

/// Translates bluetoothd's calls on characteristics and descriptors into
/// `RequestService` calls and their outcomes back into replies; the order of the steps
/// of a read or write lives in DaemonCore, not here.
///
/// Only the current owner of `org.bluez` may call: anyone else on the bus gets
/// `org.bluez.Error.NotAuthorized` and changes nothing, so no process can read or write
/// values by pretending to be bluetoothd. Calls flagged NO_REPLY_EXPECTED (StartNotify,
/// StopNotify, Confirm, and writes to `write-without-response` characteristics) are
/// never answered; `MethodCall` enforces that.
final class GattRequestHandler {
    let service: RequestService
    /// The socket paths (`AcquireNotify`, `AcquireWrite`) of this tree's characteristics.
    let sockets: AcquiredSockets
    let logger: Logger
    /// Knows the current `org.bluez` owner, the only caller trusted.
    let session: BlueZSession
    /// The `device` option of the previous request, reused while the same central asks.
    private var lastDevice: String?
    /// The `link` option of the previous request, reused while it is the same.
    private var lastLink: String?

    init(service: RequestService, sockets: AcquiredSockets, session: BlueZSession, logger: Logger) {
        self.service = service
        self.sockets = sockets
        self.session = session
        self.logger = logger
    }

    /// The unique bus name of the current `org.bluez` owner, nil while BlueZ is absent: the
    /// session's, read on every call, never a copy.
    var trustedSender: String? { session.owner }

    /// Runs `step` (one row of `GattInterfaces`) for `attribute` when bluetoothd called;
    /// refuses anyone else, and answers a call `step` finds malformed with its error.
    func serve(
        _ call: MethodCall, _ attribute: Attribute,
        _ step: (GattRequestHandler, MethodCall, Attribute) throws(DBusError) -> Void
    ) {
        guard call.isSent(by: trustedSender) else {
            logger.warning(
                "refused a call from a sender that is not bluetoothd",
                metadata: [
                    "gatt.id": "\(attribute.id)", "operation": "\(call.member ?? "")",
                    "sender": "\(call.sender ?? "?")",
                ])
            call.fail(GATTError.insufficientAuthorization.bluezError)
            return
        }
        do throws(DBusError) {
            try step(self, call, attribute)
        } catch {
            logger.info(
                "refused a malformed call",
                metadata: ["gatt.id": "\(attribute.id)", "operation": "\(call.member ?? "")", "error": "\(error.message)"])
            call.fail(error)
        }
    }

    func read(_ call: MethodCall, _ attribute: Attribute) throws(DBusError) {
        let request = try options(call, argument: 0)
        switch service.read(attribute, request) {
        case .now(let result):
            answer(call, attribute, request, result)
        case .later(let pending):
            pending.whenDone { [self] result in answer(call, attribute, request, result) }
        }
    }

    private func answer(
        _ call: MethodCall, _ attribute: Attribute, _ request: AttributeRequest,
        _ result: Result<ArraySlice<UInt8>, GATTError>
    ) {
        switch result {
        case .success(let bytes):
            logger.debug(
                "read",
                metadata: [
                    "gatt.id": "\(attribute.id)", "device": "\(request.device ?? "")",
                    "offset": "\(request.offset)", "length": "\(bytes.count)",
                ])
            call.reply(bytes: bytes)
        case .failure(let error):
            logFailure("read", attribute, request, error)
            call.fail(error.bluezError)
        }
    }

    func write(_ call: MethodCall, _ attribute: Attribute) throws(DBusError) {
        let bytes = try call.bytesArgument(at: 0)
        let request = try options(call, argument: 1)
        service.write(attribute, bytes: bytes, request) { [self] outcome in
            switch outcome {
            case .success:
                logger.debug(
                    "write",
                    metadata: [
                        "gatt.id": "\(attribute.id)", "device": "\(request.device ?? "")",
                        "offset": "\(request.offset)", "length": "\(bytes.count)",
                    ])
                call.reply()
            case .failure(let failure):
                logFailure("write", attribute, request, failure.gattError)
                call.fail(failure.gattError.bluezError)
            }
        }
    }

    /// The options argument, read as bluetoothd sends them; errors name the method called.
    private func options(_ call: MethodCall, argument: Int) throws(DBusError) -> AttributeRequest {
        let request = try GattRequestOptions(
            call.message, argument: argument, method: call.member ?? "", previousDevice: lastDevice, previousLink: lastLink
        ).request(call)
        if let device = request.device { lastDevice = device }
        if let link = request.link { lastLink = link }
        return request
    }

    func notify(_ call: MethodCall, _ attribute: Attribute, on: Bool) {
        if service.setNotifying(attribute, on) {
            logger.info(
                on ? "subscribed" : "unsubscribed",
                metadata: ["gatt.id": "\(attribute.id)", "gatt.uuid": "\(attribute.uuid)"])
            call.reply()
        } else {
            call.fail(GATTError.requestNotSupported.bluezError)
        }
    }

    func acquire(
        _ call: MethodCall, _ attribute: Attribute, _ kind: AcquiredSockets.Kinds
    ) throws(DBusError) {
        let request = try options(call, argument: 0)
        try sockets.acquire(kind, attribute, request) { descriptor, mtu in
            call.reply([.unixFD(descriptor), .uint16(mtu)])
        }
    }

    func confirm(_ call: MethodCall, _ attribute: Attribute) {
        service.confirm(attribute)
        logger.debug("indication confirmed", metadata: ["gatt.id": "\(attribute.id)"])
        call.reply()
    }

    private func logFailure(_ operation: String, _ attribute: Attribute, _ request: AttributeRequest, _ error: GATTError) {
        logger.debug(
            "\(operation) refused",
            metadata: [
                "gatt.id": "\(attribute.id)", "device": "\(request.device ?? "")",
                "offset": "\(request.offset)", "att.error": "0x\(String(error.attCode, radix: 16))",
            ])
    }
}
