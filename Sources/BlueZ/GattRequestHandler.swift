// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import DaemonCore
internal import Logging

/// Answers bluetoothd's calls on characteristics and descriptors.
///
/// Only the current owner of `org.bluez` may call: anyone else on the bus gets
/// `org.bluez.Error.NotAuthorized` and changes nothing, so no process can read or write
/// values by pretending to be bluetoothd. Calls flagged NO_REPLY_EXPECTED (StartNotify,
/// StopNotify, Confirm, and writes to `write-without-response` characteristics) are
/// never answered; `MethodCall` enforces that.
final class GattRequestHandler {
    let database: AttributeDatabase
    let logger: Logger
    /// The unique bus name of the current `org.bluez` owner, nil while BlueZ is absent.
    var trustedSender: String?
    /// When set, a write's reply waits until its value is on disk; a failed save answers
    /// 0x0E Unlikely Error (the value is rolled back, so the central's view is consistent).
    var persistence: Persistence?
    /// Learns the MTU from the `mtu` option of reads and writes.
    var mtuTracker: MTUTracker?
    /// Runs `onWrite` programs: a deciding one before the write is stored, others after
    /// it is stored (and durable).
    var writeHooks: WriteHookRunner?

    init(database: AttributeDatabase, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    func handle(_ call: MethodCall, for attribute: Attribute, at path: ObjectPath) {
        let member = call.member ?? ""
        guard call.isSent(by: trustedSender) else {
            logger.warning(
                "refused a call from a sender that is not bluetoothd",
                metadata: [
                    "gatt.id": "\(attribute.id)", "operation": "\(member)",
                    "sender": "\(call.sender ?? "?")",
                ])
            call.fail(GATTError.insufficientAuthorization.bluezError)
            return
        }
        do throws(DBusError) {
            switch member {
            case "ReadValue": try read(call, attribute)
            case "WriteValue": try write(call, attribute)
            case "StartNotify": notify(call, attribute, on: true)
            case "StopNotify": notify(call, attribute, on: false)
            case "Confirm":
                database.confirm(attribute)
                logger.debug("indication confirmed", metadata: ["gatt.id": "\(attribute.id)"])
                call.reply()
            default:
                call.fail(DBusError.unknownMethod("No method \(member)"))
            }
        } catch {
            logger.info(
                "refused a malformed call",
                metadata: ["gatt.id": "\(attribute.id)", "operation": "\(member)", "error": "\(error.message)"])
            call.fail(error)
        }
    }

    private func read(_ call: MethodCall, _ attribute: Attribute) throws(DBusError) {
        let options = try GattRequestOptions(call, argument: 0, method: "ReadValue")
        if let mtu = options.mtu { mtuTracker?.record(mtu: mtu, device: options.device) }
        switch database.read(attribute, offset: options.offset) {
        case .success(let bytes):
            logger.debug(
                "read",
                metadata: [
                    "gatt.id": "\(attribute.id)", "device": "\(options.device ?? "")",
                    "offset": "\(options.offset)", "length": "\(bytes.count)",
                ])
            call.reply(bytes: bytes)
        case .failure(let error):
            logFailure("read", attribute, options, error)
            call.fail(error.bluezError)
        }
    }

    private func write(_ call: MethodCall, _ attribute: Attribute) throws(DBusError) {
        let bytes = try call.bytesArgument(at: 0)
        let options = try GattRequestOptions(call, argument: 1, method: "WriteValue")
        if let mtu = options.mtu { mtuTracker?.record(mtu: mtu, device: options.device) }
        let hook = options.prepareAuthorize ? nil : writeHooks?.hook(for: attribute)
        if let hook, hook.decides, let writeHooks {
            // The reply waits for the program; the value is stored only if it accepts.
            if case .failure(let error) = database.validateWrite(attribute, count: bytes.count, offset: options.offset) {
                logFailure("write", attribute, options, error)
                call.fail(error.bluezError)
                return
            }
            writeHooks.decide(attribute, bytes: bytes, offset: options.offset, device: options.device) { [self] refusal in
                let result: Result<Void, GATTError> =
                    if let refusal { .failure(refusal) } else {
                        database.write(attribute, bytes: bytes, offset: options.offset, origin: .central(device: options.device))
                    }
                finishWrite(call, attribute, bytes, options, result, runHook: false)
            }
            return
        }
        let result: Result<Void, GATTError>
        if options.prepareAuthorize {
            // Only asks whether a Prepare Write may be queued; the data comes later as
            // ordinary offset writes on Execute Write (bluez-contract.md 1.5).
            result = database.validateWrite(attribute, count: bytes.count, offset: options.offset)
        } else {
            result = database.write(attribute, bytes: bytes, offset: options.offset, origin: .central(device: options.device))
        }
        finishWrite(call, attribute, bytes, options, result, runHook: hook != nil)
    }

    /// Replies to a write once its value is durable; then runs a non-deciding hook.
    private func finishWrite(
        _ call: MethodCall, _ attribute: Attribute, _ bytes: [UInt8], _ options: GattRequestOptions,
        _ result: Result<Void, GATTError>, runHook: Bool
    ) {
        let hook = { [writeHooks] in
            if runHook { writeHooks?.written(attribute, bytes: bytes, offset: options.offset, device: options.device) }
        }
        switch result {
        case .success:
            logger.debug(
                "write",
                metadata: [
                    "gatt.id": "\(attribute.id)", "device": "\(options.device ?? "")",
                    "offset": "\(options.offset)", "length": "\(bytes.count)",
                ])
            guard let persistence, !options.prepareAuthorize else {
                call.reply()
                hook()
                return
            }
            persistence.commit(afterWriteTo: attribute) { [logger] saved in
                switch saved {
                case .success:
                    call.reply()
                    hook()
                case .failure(let error):
                    // 0x0E rather than an application code: 0x80-0x9F belong to the
                    // profile, and "unlikely" is what a central can make sense of.
                    logger.warning(
                        "write refused: its value could not be saved",
                        metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
                    call.fail(GATTError.unlikely.bluezError)
                }
            }
        case .failure(let error):
            logFailure("write", attribute, options, error)
            call.fail(error.bluezError)
        }
    }

    private func notify(_ call: MethodCall, _ attribute: Attribute, on: Bool) {
        if database.setNotifying(attribute, on) {
            logger.info(
                on ? "subscribed" : "unsubscribed",
                metadata: ["gatt.id": "\(attribute.id)", "gatt.uuid": "\(attribute.uuid)"])
            call.reply()
        } else {
            call.fail(GATTError.requestNotSupported.bluezError)
        }
    }

    private func logFailure(_ operation: String, _ attribute: Attribute, _ options: GattRequestOptions, _ error: GATTError) {
        logger.debug(
            "\(operation) refused",
            metadata: [
                "gatt.id": "\(attribute.id)", "device": "\(options.device ?? "")",
                "offset": "\(options.offset)", "att.error": "0x\(String(error.attCode, radix: 16))",
            ])
    }
}
