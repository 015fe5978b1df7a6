// SPDX-License-Identifier: MIT

public import BLEModel
import Logging

/// The one place where the steps of a read and of a write are ordered. Its callers only
/// translate: the BlueZ layer (a central, through bluetoothd) and the control API (a
/// program on the board); neither spells the steps out again. (The value sources are no
/// request: each sets its readings in the database of its own runtime, the one this
/// service serves while their timers run: `UpdateScheduler`.)
///
/// A write from a central:
/// 1. validate (permission, offset, resulting length) — a failure is the ATT result;
/// 2. `prepare-authorize` only asks: answered by the validation alone (without the
///    length bounds: it carries no data, the final length is checked at Execute Write);
/// 3. accept: the definition's `accept` rule on the resulting value (its error, or 0x0D
///    for a value that is not one number of its type);
/// 4. decide: the program's handler that claimed the attribute, else a deciding
///    `onWrite` hook, accepts or refuses; the value is stored only if accepted (a handler
///    that does not answer in time gets the attribute's fallback, and so does an attribute
///    no handler has claimed: with `"fallback": "error"` it is refused, fail closed);
/// 5. store (observers see the change: notifications, control-API signals);
/// 6. durable: when the attribute persists, the reply waits for the state file;
/// 7. reply, then run a non-deciding `onWrite` hook.
///
/// A control-API `SetValue` checks only the length (a program needs no write flag, and
/// is trusted like a handler: the `accept` rule is for centrals),
/// then stores, makes durable and replies the same way. Lives on the loop thread.
public final class RequestService {
    /// A characteristic whose `SetValue` was refused for a full queue has room again
    /// (whichever notifier is current).
    public var onReadyToUpdate: ((Attribute) -> Void)?
    /// The runtime served: its attribute database, its persistence (when set, a write's
    /// reply waits until its value is on disk), its notifier (paces notifications and hands
    /// them to the sink) and its `onWrite` hooks. The service keeps no copy of any of them,
    /// so a reload that gives it a new runtime (`serve(_:)`) leaves nothing stale behind.
    public private(set) var runtime: Runtime
    /// Learns the MTU from the requests of centrals (kept across reloads).
    public let mtu: MTUTracker
    /// Which program serves which attribute; outlives reloads.
    public let handlers = HandlerRegistry()
    /// The address bluetoothd gives a central's device object now (`Device1.Address`), for
    /// handlers and hooks; asked only when one runs, never on the plain read path.
    public var centralAddress: (String) -> String? = { _ in nil }
    let logger: Logger

    /// Serves `runtime` (`RuntimeFactory.makeService`).
    init(runtime: Runtime, mtu: MTUTracker, logger: Logger) {
        self.runtime = runtime
        self.mtu = mtu
        self.logger = logger
        forwardReady(runtime.notifier)
        handlers.apply(to: runtime.database)
    }

    /// Only the notifier being served forwards to this service, and it stops before the
    /// service goes (`deinit`), so the closure holds the service unowned(unsafe): a weak
    /// reference would give the service a side table, and every retain of it (two on each
    /// value source's tick, which calls `update` and `hasRoom`) would take the slow path.
    private func forwardReady(_ notifier: Notifier) {
        notifier.onReady = { [unowned(unsafe) self] attribute in self.onReadyToUpdate?(attribute) }
    }

    deinit {
        runtime.notifier.onReady = nil
    }

    /// A reload rebuilt the tree: serve `runtime` from now on (`RuntimeFactory.make`).
    public func serve(_ runtime: Runtime) {
        self.runtime.notifier.onReady = nil
        self.runtime = runtime
        forwardReady(runtime.notifier)
        longReads = LongReadCache()
        for id in handlers.apply(to: runtime.database) {
            logger.warning("a handler's claim ended: the reloaded definition has no such id", metadata: ["gatt.id": "\(id)"])
        }
    }

    // MARK: - Reads

    /// A read's answer: at once (a stored value), or later (a program's handler answers).
    public enum ReadOutcome {
        case now(Result<ArraySlice<UInt8>, GATTError>)
        case later(PendingRead)
    }

    /// The bytes a central gets for a read at `request.offset`. An attribute a handler
    /// serves is asked once per read sequence: the read at offset 0 of a device asks the
    /// handler, and that device's follow-up reads at offsets (a long read) are served from
    /// the same bytes, so the central never stitches together two different values.
    public func read(_ attribute: Attribute, _ request: AttributeRequest) -> ReadOutcome {
        if let mtu = request.mtu { self.mtu.record(mtu: mtu, device: request.device) }
        guard let handler = attribute.readHandler else {
            // Fail closed: a definition that wants a handler's decision refuses without one
            // (a handler that took only the writes leaves the reads to the store).
            if case .error(let error) = attribute.handling.fallback, attribute.access.contains(.read),
                attribute.writeHandler == nil
            {
                logNoHandler(attribute, "read", error)
                return .now(.failure(error))
            }
            return .now(runtime.database.read(attribute, offset: request.offset))
        }
        guard attribute.access.contains(.read) else { return .now(.failure(.readNotPermitted)) }
        // What one response carries at most: ATT MTU - 1. Without an MTU no read is taken
        // for a long one under way (each offset-0 read asks the handler, as before EATT).
        let payload = request.mtu.map { max($0 - 1, 1) } ?? Int.max
        if request.offset > 0,
            let bytes = longReads.continueRead(
                of: attribute.id, device: request.device, offset: request.offset, payload: payload,
                now: runtime.notifier.clock.now())
        {
            return .now(Self.slice(bytes, at: request.offset))
        }
        let key = attribute.id + "\u{0}" + (request.device ?? "")
        if request.offset == 0 {
            // Another long read of this central's is under way (EATT: one per bearer): the same
            // bytes, or the same answer once the handler gives it (`LongReadCache`).
            if let bytes = longReads.joinRead(
                of: attribute.id, device: request.device, payload: payload, now: runtime.notifier.clock.now())
            {
                return .now(.success(bytes[...]))
            }
            if asking[key] != nil {
                let joined = PendingRead()
                asking[key]?.append((joined, payload))
                return .later(joined)
            }
            asking[key] = []
        }
        let pending = PendingRead()
        handler.read(attribute, addressed(request), timeout: .milliseconds(attribute.handling.timeoutMs)) { [self] answer in
            let joined = request.offset == 0 ? asking.removeValue(forKey: key) ?? [] : []
            let result = readAnswer(answer, attribute, handler, request, payload: payload)
            pending.finish(result)
            for (read, payload) in joined {
                if case .success = result,
                    let bytes = longReads.joinRead(
                        of: attribute.id, device: request.device, payload: payload, now: runtime.notifier.clock.now())
                {
                    read.finish(.success(bytes[...]))
                } else {
                    read.finish(result)
                }
            }
        }
        return .later(pending)
    }

    /// A handler's answer to `request` as the central's result; an answer at offset 0 is
    /// kept for the central's follow-up reads.
    private func readAnswer(
        _ answer: HandlerAnswer<[UInt8]>, _ attribute: Attribute, _ handler: any AttributeHandler,
        _ request: AttributeRequest, payload: Int
    ) -> Result<ArraySlice<UInt8>, GATTError> {
        switch answer {
        case .answered(let bytes):
            guard (attribute.minLength...attribute.maxLength).contains(bytes.count) else {
                logger.warning(
                    "handler answered a read with a value of the wrong length; refused with 0x0e",
                    metadata: [
                        "gatt.id": "\(attribute.id)", "handler": "\(handler.name)", "length": "\(bytes.count)",
                        "bounds": "\(attribute.minLength)...\(attribute.maxLength)",
                    ])
                return .failure(.unlikely)
            }
            if request.offset == 0 {
                longReads.remember(
                    bytes, of: attribute.id, device: request.device, payload: payload,
                    now: runtime.notifier.clock.now())
            }
            return Self.slice(bytes, at: request.offset)
        case .refused(let error):
            return .failure(error)
        case .malformed(let reason):
            return .failure(refuseMalformed(handler, attribute, "read", reason))
        case .unavailable(let reason):
            logUnavailable(handler, attribute, "read", reason)
            switch attribute.handling.fallback {
            case .storedValue: return runtime.database.read(attribute, offset: request.offset)
            case .error(let error): return .failure(error)
            }
        }
    }

    /// `request` with the central's address, for a handler or hook.
    private func addressed(_ request: AttributeRequest) -> AttributeRequest {
        guard let device = request.device else { return request }
        var named = request
        named.address = centralAddress(device)
        return named
    }

    private static func slice(_ bytes: [UInt8], at offset: Int) -> Result<ArraySlice<UInt8>, GATTError> {
        guard offset >= 0, offset <= bytes.count else { return .failure(.invalidOffset) }
        return .success(bytes[offset...])
    }

    /// The bytes handlers answered at offset 0, per attribute and device, for the
    /// follow-up reads of a long read.
    private var longReads = LongReadCache()
    /// Offset-0 reads waiting for the answer the handler is asked for the same attribute and
    /// central (EATT: the same read on two bearers), with the payload of each one's bearer.
    private var asking: [String: [(PendingRead, Int)]] = [:]

    private func logUnavailable(_ handler: any AttributeHandler, _ attribute: Attribute, _ operation: String, _ reason: String) {
        let fallback =
            switch attribute.handling.fallback {
            case .storedValue: "stored value"
            case .error(let error): "ATT error 0x" + String(error.attCode, radix: 16)
            }
        logger.warning(
            "handler did not answer; using the fallback",
            metadata: [
                "gatt.id": "\(attribute.id)", "handler": "\(handler.name)", "operation": "\(operation)",
                "reason": "\(reason)", "fallback": "\(fallback)",
            ])
    }

    /// No handler is registered for an attribute whose fallback is an error: refused.
    private func logNoHandler(_ attribute: Attribute, _ operation: String, _ error: GATTError) {
        logger.warning(
            "refused: no handler is registered; using the fallback",
            metadata: [
                "gatt.id": "\(attribute.id)", "operation": "\(operation)", "reason": "no handler registered",
                "fallback": "ATT error 0x\(String(error.attCode, radix: 16))",
            ])
    }

    /// A handler answered, but not in a form gattd can use: never served from the stored
    /// value or stored; the fallback's error, else 0x0E.
    private func refuseMalformed(
        _ handler: any AttributeHandler, _ attribute: Attribute, _ operation: String, _ reason: String
    ) -> GATTError {
        let error: GATTError =
            switch attribute.handling.fallback {
            case .error(let error): error
            case .storedValue: .unlikely
            }
        logger.warning(
            "refused: the handler's answer is malformed",
            metadata: [
                "gatt.id": "\(attribute.id)", "handler": "\(handler.name)", "operation": "\(operation)",
                "reason": "\(reason)", "att.error": "0x\(String(error.attCode, radix: 16))",
            ])
        return error
    }

    // MARK: - Writes

    public typealias WriteCompletion = (Result<Void, WriteFailure>) -> Void

    /// Runs the write pipeline for `bytes` at `request.offset`; `completion` runs once,
    /// possibly before this returns, with the outcome the caller answers with.
    public func write(
        _ attribute: Attribute, bytes: [UInt8], _ request: AttributeRequest, completion: @escaping WriteCompletion
    ) {
        if let mtu = request.mtu { self.mtu.record(mtu: mtu, device: request.device) }
        if case .failure(let error) = validate(attribute, count: bytes.count, request) {
            completion(.failure(.refused(error)))
            return
        }
        if request.prepareAuthorize {
            // Only asks whether a Prepare Write may be queued; the data comes later as
            // ordinary offset writes on Execute Write.
            completion(.success(()))
            return
        }
        if request.caller == .central, let rule = attribute.accept,
            let refusal = refusal(by: rule, of: attribute, bytes, request)
        {
            completion(.failure(.refused(refusal)))
            return
        }
        if request.caller == .central, let handler = attribute.writeHandler {
            let timeout = Duration.milliseconds(attribute.handling.timeoutMs)
            handler.write(attribute, bytes: bytes, addressed(request), timeout: timeout) { [self] answer in
                switch answer {
                case .answered:
                    let hook = runtime.writeHooks.hook(for: attribute)
                    store(attribute, bytes, request, runHook: hook != nil && hook?.decides == false, completion: completion)
                case .refused(let error):
                    completion(.failure(.refused(error)))
                case .malformed(let reason):
                    completion(.failure(.refused(refuseMalformed(handler, attribute, "write", reason))))
                case .unavailable(let reason):
                    logUnavailable(handler, attribute, "write", reason)
                    switch attribute.handling.fallback {
                    case .storedValue: decideByHook(attribute, bytes, request, completion: completion)
                    case .error(let error): completion(.failure(.refused(error)))
                    }
                }
            }
            return
        }
        if request.caller == .central, case .error(let error) = attribute.handling.fallback, attribute.readHandler == nil {
            // Fail closed: the definition wants a handler's decision and none is registered
            // (a handler that took only the reads leaves the writes to gattd).
            logNoHandler(attribute, "write", error)
            completion(.failure(.refused(error)))
            return
        }
        decideByHook(attribute, bytes, request, completion: completion)
    }

    /// The definition's `accept` rule on the value the write would leave (offset writes
    /// keep the bytes before the offset); nil when it passes. A central's write only: a
    /// program on the board is trusted like a handler (docs/fail-closed.md).
    private func refusal(
        by rule: AcceptRule, of attribute: Attribute, _ bytes: [UInt8], _ request: AttributeRequest
    ) -> GATTError? {
        let result = request.offset == 0 ? bytes : Array(attribute.value[..<request.offset]) + bytes
        guard let error = rule.refusal(of: result) else { return nil }
        logger.info(
            "write refused by the definition's accept rule",
            metadata: [
                "gatt.id": "\(attribute.id)", "value": "\(rule.type.decode(result) ?? "\(result.count) byte(s)")",
                "accept": "\(rule.summary)", "att.error": "0x\(String(error.attCode, radix: 16))",
            ])
        return error
    }

    /// The deciding `onWrite` hook, if any, then `store`.
    private func decideByHook(
        _ attribute: Attribute, _ bytes: [UInt8], _ request: AttributeRequest, completion: @escaping WriteCompletion
    ) {
        let hook = request.caller == .central ? runtime.writeHooks.hook(for: attribute) : nil
        if let hook, hook.decides {
            let named = addressed(request)
            runtime.writeHooks.decide(
                attribute, bytes: bytes, offset: request.offset, device: request.device, address: named.address
            ) {
                [self] refusal in
                if let refusal {
                    completion(.failure(.refused(refusal)))
                } else {
                    store(attribute, bytes, request, runHook: false, completion: completion)
                }
            }
            return
        }
        store(attribute, bytes, request, runHook: hook != nil, completion: completion)
    }

    /// Sets a value as a program on the board (`SetValue`): `write` with `.control`.
    public func set(_ attribute: Attribute, to bytes: [UInt8], completion: @escaping WriteCompletion) {
        write(attribute, bytes: bytes, .control, completion: completion)
    }

    private func validate(_ attribute: Attribute, count: Int, _ request: AttributeRequest) -> Result<Void, GATTError> {
        switch request.caller {
        case .central where request.prepareAuthorize:
            // bluetoothd asks before queueing the first piece and sends no data (5.66, 5.82:
            // `prep_write_cb` writes NULL, 0): the final length is checked at Execute Write,
            // so only the permission, the offset and the ceiling are checked here.
            guard attribute.access.isWritable else { return .failure(.writeNotPermitted) }
            guard request.offset <= attribute.value.count else { return .failure(.invalidOffset) }
            guard request.offset + count <= attribute.maxLength else { return .failure(.invalidAttributeValueLength) }
            return .success(())
        case .central:
            return runtime.database.validateWrite(attribute, count: count, offset: request.offset)
        case .control:
            guard (attribute.minLength...attribute.maxLength).contains(count) else {
                return .failure(.invalidAttributeValueLength)
            }
            return .success(())
        }
    }

    /// Stores (validated again: a decision may have taken a while), makes durable,
    /// completes, then runs a non-deciding hook.
    private func store(
        _ attribute: Attribute, _ bytes: [UInt8], _ request: AttributeRequest, runHook: Bool,
        completion: @escaping WriteCompletion
    ) {
        if request.caller == .control, !runtime.notifier.admits(attribute) {
            completion(.failure(.queueFull(capacity: runtime.notifier.queueCapacity(attribute) ?? 0)))
            return
        }
        let stored: Result<Void, GATTError> =
            switch request.caller {
            case .central:
                runtime.database.write(attribute, bytes: bytes, offset: request.offset, origin: request.origin)
            case .control:
                // With delivery "all" each value is a sample, equal to the last or not.
                runtime.database.set(
                    attribute, to: bytes, origin: request.origin,
                    evenIfUnchanged: runtime.notifier.queueCapacity(attribute) != nil)
            }
        if case .failure(let error) = stored {
            completion(.failure(.refused(error)))
            return
        }
        let afterReply = { [writeHooks = runtime.writeHooks, centralAddress] in
            guard runHook else { return }
            writeHooks.written(
                attribute, bytes: bytes, offset: request.offset, device: request.device,
                address: request.device.flatMap(centralAddress))
        }
        guard let persistence = runtime.persistence else {
            completion(.success(()))
            afterReply()
            return
        }
        persistence.commit(afterWriteTo: attribute) { [logger] saved in
            switch saved {
            case .success:
                completion(.success(()))
                afterReply()
            case .failure(let error):
                logger.warning(
                    "write refused: its value could not be saved",
                    metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
                completion(.failure(.notSaved(reason: "\(error)")))
            }
        }
    }

    // MARK: - Subscriptions

    /// bluetoothd's StartNotify/StopNotify. False when the attribute cannot notify.
    public func setNotifying(_ attribute: Attribute, _ notifying: Bool) -> Bool {
        runtime.database.setNotifying(attribute, notifying)
    }

    /// bluetoothd's Confirm: a central acknowledged an indication.
    public func confirm(_ attribute: Attribute) {
        runtime.database.confirm(attribute)
        runtime.notifier.confirmed(attribute)
    }
}
