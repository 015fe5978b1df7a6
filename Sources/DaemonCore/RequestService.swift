// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging

/// The one place where the steps of a read and of a write are ordered. Its callers only
/// translate: the BlueZ layer (a central, through bluetoothd), the control API (a program
/// on the board), and the value sources; none of them spells the steps out again.
///
/// A write from a central:
/// 1. validate (permission, offset, resulting length) — a failure is the ATT result;
/// 2. `prepare-authorize` only asks: answered by the validation alone;
/// 3. decide: a deciding `onWrite` hook (or a program's handler) accepts or refuses;
///    the value is stored only if accepted;
/// 4. store (observers see the change: notifications, control-API signals);
/// 5. durable: when the attribute persists, the reply waits for the state file;
/// 6. reply, then run a non-deciding `onWrite` hook.
///
/// A control-API `SetValue` checks only the length (a program needs no write flag),
/// then stores, makes durable and replies the same way. Lives on the loop thread.
public final class RequestService {
    /// A characteristic whose `SetValue` was refused for a full queue has room again
    /// (whichever notifier is current).
    public var onReadyToUpdate: ((Attribute) -> Void)?
    /// Replaced, with `persistence`, `notifier` and `writeHooks`, by a reload that
    /// rebuilds the GATT tree (`replace(database:persistence:notifier:writeHooks:)`).
    public private(set) var database: AttributeDatabase
    /// When set, a write's reply waits until its value is on disk.
    public private(set) var persistence: Persistence?
    /// Paces notifications and hands them to the sink.
    public private(set) var notifier: Notifier
    /// Runs `onWrite` programs; nil: hooks are not run.
    public private(set) var writeHooks: WriteHookRunner?
    /// Learns the MTU from the requests of centrals (kept across reloads).
    public let mtu: MTUTracker
    let logger: Logger

    public init(
        database: AttributeDatabase, persistence: Persistence?, notifier: Notifier, writeHooks: WriteHookRunner?,
        mtu: MTUTracker, logger: Logger
    ) {
        self.database = database
        self.persistence = persistence
        self.notifier = notifier
        self.writeHooks = writeHooks
        self.mtu = mtu
        self.logger = logger
        forwardReady(notifier)
    }

    private func forwardReady(_ notifier: Notifier) {
        notifier.onReady = { [weak self] attribute in self?.onReadyToUpdate?(attribute) }
    }

    /// A reload rebuilt the tree: serve the new database from now on.
    public func replace(
        database: AttributeDatabase, persistence: Persistence?, notifier: Notifier, writeHooks: WriteHookRunner?
    ) {
        self.database = database
        self.persistence = persistence
        self.notifier = notifier
        self.writeHooks = writeHooks
        forwardReady(notifier)
    }

    // MARK: - Reads

    /// The bytes a central gets for a read at `request.offset`.
    public func read(_ attribute: Attribute, _ request: AttributeRequest) -> Result<ArraySlice<UInt8>, GATTError> {
        if let mtu = request.mtu { self.mtu.record(mtu: mtu, device: request.device) }
        return database.read(attribute, offset: request.offset)
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
        let hook = request.caller == .central ? writeHooks?.hook(for: attribute) : nil
        if let hook, hook.decides, let writeHooks {
            writeHooks.decide(attribute, bytes: bytes, offset: request.offset, device: request.device) {
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
        case .central:
            return database.validateWrite(attribute, count: count, offset: request.offset)
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
        if request.caller == .control, !notifier.admits(attribute) {
            completion(.failure(.queueFull(capacity: notifier.queueCapacity(attribute) ?? 0)))
            return
        }
        let stored: Result<Void, GATTError> =
            switch request.caller {
            case .central: database.write(attribute, bytes: bytes, offset: request.offset, origin: request.origin)
            case .control:
                // With delivery "all" each value is a sample, equal to the last or not.
                database.set(
                    attribute, to: bytes, origin: request.origin,
                    evenIfUnchanged: notifier.queueCapacity(attribute) != nil)
            }
        if case .failure(let error) = stored {
            completion(.failure(.refused(error)))
            return
        }
        let afterReply = { [writeHooks] in
            if runHook { writeHooks?.written(attribute, bytes: bytes, offset: request.offset, device: request.device) }
        }
        guard let persistence else {
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
        database.setNotifying(attribute, notifying)
    }

    /// bluetoothd's Confirm: a central acknowledged an indication.
    public func confirm(_ attribute: Attribute) {
        database.confirm(attribute)
        notifier.confirmed(attribute)
    }
}
