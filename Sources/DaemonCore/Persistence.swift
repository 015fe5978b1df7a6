// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging

/// The persistence policy: what is saved, when, and what a write's reply waits for.
///
/// Lives on the loop thread, like the database.
///
/// - **What.** A characteristic persists when its definition says `"persist"`, else when a
///   central or the control API can write it (a write flag). A descriptor persists when
///   it has a write flag and its characteristic is not `"persist": false`. Value-source
///   counters and advertisement on/off states persist always.
/// - **Acknowledged means durable.** `commit(afterWriteTo:reply:)` holds the reply of a
///   write to a persistent attribute until the document containing it has been saved.
///   All commits of one loop iteration share one save (one fsync). When the save fails,
///   every waiting reply gets the error and each attribute they wrote goes back to its
///   last saved value (origin `.restored`), so no write is acknowledged and then lost,
///   and none is refused and then kept. Between the write and the end of the iteration a
///   read or a notification can show the not yet durable value.
/// - **Timer values** (origin `.timer`) and counters are saved at most `timerSaveDelay`
///   after the first unsaved change, by one pending timer, not on every tick.
/// - A flush whose document equals the last saved one writes nothing.
public final class Persistence {
    public typealias Reply = (Result<Void, StateStoreError>) -> Void

    /// Upper bound on how long a timer-produced value or counter stays unsaved.
    public let timerSaveDelay: Duration
    /// Number of documents written so far (one per flush that had something new).
    public private(set) var saveCount = 0

    private let database: AttributeDatabase
    private let storage: any StateStorage
    private let scheduling: PersistenceScheduling
    private let logger: Logger
    private let persistentIDs: Set<String>
    private let updatedIDs: Set<String>
    private let advertisementIDs: Set<String>
    /// The document on disk, as far as this process knows.
    private var saved = StateDocument()
    /// The counter of each value source, by characteristic id; a cell, so that a source's
    /// recorder (`counterRecorder(id:)`) updates it without a lookup on every tick.
    private var counters: [String: CounterCell] = [:]
    private var advertisementStates: [String: Bool] = [:]
    private var advertisementData: [String: String] = [:]
    private var handles = AttributeHandles()
    private var waiting: [(id: String?, reply: Reply)] = []
    private var flushScheduled = false
    private var delayedSaveScheduled = false
    private var failing = false

    public init(
        configuration: Configuration, database: AttributeDatabase, storage: any StateStorage,
        scheduling: PersistenceScheduling, timerSaveDelay: Duration = .seconds(1),
        logger: Logger = Logger(label: "gattd.state")
    ) {
        self.database = database
        self.storage = storage
        self.scheduling = scheduling
        self.timerSaveDelay = timerSaveDelay
        self.logger = logger
        persistentIDs = Self.persistentIDs(configuration)
        updatedIDs = Set(configuration.services.flatMap(\.characteristics).filter { $0.update != nil }.map(\.id))
        advertisementIDs = Set(configuration.advertisements.map(\.id))
        saved = makeDocument()
        database.observeChanges { [weak self] attribute, origin in self?.valueChanged(attribute, origin) }
    }

    /// The ids of the attributes whose values are saved.
    public static func persistentIDs(_ configuration: Configuration) -> Set<String> {
        var ids: Set<String> = []
        for characteristic in configuration.services.flatMap(\.characteristics) {
            if characteristic.persist ?? AttributeAccess(characteristic.flags).isWritable {
                ids.insert(characteristic.id)
            }
            guard characteristic.persist != false else { continue }
            for descriptor in characteristic.descriptors where AttributeAccess(descriptor.flags).isWritable {
                ids.insert(descriptor.id)
            }
        }
        return ids
    }

    public func persists(_ attribute: Attribute) -> Bool { persistentIDs.contains(attribute.id) }

    // MARK: - Restore

    /// Applies what `StateStore.load()` found, before the application is registered.
    ///
    /// Saved values that no longer fit (attribute removed or no longer persistent, other
    /// kind, UUID changed, length outside the current bounds) are dropped and logged with
    /// their id and reason; the others are set with origin `.restored`. Counters of
    /// characteristics without an `update` and states of unknown advertisements are
    /// dropped the same way.
    @discardableResult
    public func restore(from result: StateLoadResult) -> [DroppedValue] {
        let document: StateDocument
        switch result {
        case .fresh:
            logger.info("no saved state; starting from the definition's values")
            return []
        case .damaged(let reason, let movedTo):
            logger.error(
                "the state file is damaged; starting from the definition's values",
                metadata: ["reason": "\(reason)", "moved.to": "\(movedTo ?? "(could not move it)")"])
            return []
        case .loaded(let loaded):
            document = loaded
        }
        var dropped: [DroppedValue] = []
        var restored = 0
        for (id, value) in document.characteristics.sorted(by: { $0.key < $1.key }) {
            if let reason = apply(value, to: id, asCharacteristic: true) {
                dropped.append(DroppedValue(id: id, reason: reason))
            } else {
                restored += 1
            }
        }
        for (id, value) in document.descriptors.sorted(by: { $0.key < $1.key }) {
            if let reason = apply(value, to: id, asCharacteristic: false) {
                dropped.append(DroppedValue(id: id, reason: reason))
            } else {
                restored += 1
            }
        }
        for (id, source) in document.sources.sorted(by: { $0.key < $1.key }) {
            if updatedIDs.contains(id) {
                counterCell(id).value = source.counter
            } else {
                dropped.append(DroppedValue(id: id, reason: "no longer has a value source"))
            }
        }
        for (id, enabled) in document.advertisements.sorted(by: { $0.key < $1.key }) {
            if advertisementIDs.contains(id) {
                advertisementStates[id] = enabled
            } else {
                dropped.append(DroppedValue(id: id, reason: "no longer defined"))
            }
        }
        for (id, data) in document.advertisementData.sorted(by: { $0.key < $1.key }) {
            if advertisementIDs.contains(id) {
                advertisementData[id] = data
            } else {
                dropped.append(DroppedValue(id: id, reason: "advertisement no longer defined"))
            }
        }
        handles = document.handles
        if let problem = document.discardedHandles {
            logger.error(
                "the state file's attribute handles are unusable; bluetoothd places the attributes anew, the saved values are kept",
                metadata: ["reason": "\(problem)"])
        }
        for drop in dropped {
            logger.warning("dropped a saved value", metadata: ["gatt.id": "\(drop.id)", "reason": "\(drop.reason)"])
        }
        logger.info("restored saved state", metadata: ["values": "\(restored)", "dropped": "\(dropped.count)"])
        saved = makeDocument()
        return dropped
    }

    /// nil when applied, else why not (`AttributeDatabase.restoreValue`'s rule).
    private func apply(_ value: StateDocument.SavedValue, to id: String, asCharacteristic: Bool) -> String? {
        database.restoreValue(
            value.value, id: id, uuid: value.uuid, isCharacteristic: asCharacteristic, keeps: { persists($0) })
    }

    // MARK: - Writes

    /// Calls `reply` once the value `attribute` has now is durable: after the flush at the
    /// end of this loop iteration, or at once when the attribute does not persist. On
    /// failure the attribute is back at its last saved value when `reply` runs.
    public func commit(afterWriteTo attribute: Attribute, reply: @escaping Reply) {
        guard persists(attribute) else {
            reply(.success(()))
            return
        }
        waiting.append((attribute.id, reply))
        scheduleFlush()
    }

    // MARK: - Owners of counters and advertisements

    /// The counter of the value source that updates characteristic `id`, as restored or
    /// last recorded; nil when there is none.
    public func savedCounter(id: String) -> Int64? { counters[id]?.value }

    /// Records a counter; saved within `timerSaveDelay`.
    public func recordCounter(_ value: Int64, id: String) {
        record(value, in: counterCell(id))
    }

    /// `recordCounter(_:id:)` for the value source of characteristic `id`, with the id
    /// looked up once, here, not on every tick.
    public func counterRecorder(id: String) -> (Int64) -> Void {
        let cell = counterCell(id)
        return { [weak self] value in self?.record(value, in: cell) }
    }

    private func record(_ value: Int64, in cell: CounterCell) {
        guard cell.value != value else { return }
        cell.value = value
        scheduleDelayedSave()
    }

    private func counterCell(_ id: String) -> CounterCell {
        if let cell = counters[id] { return cell }
        let cell = CounterCell()
        counters[id] = cell
        return cell
    }

    /// Whether advertisement `id` was on, as restored or last recorded; nil when unknown.
    public func savedAdvertisementEnabled(id: String) -> Bool? { advertisementStates[id] }

    /// Records an advertisement's on/off state; saved at the end of this iteration, and
    /// `reply` (if any) waits for that save as a write's reply does. A failed save puts
    /// the recorded state back.
    public func recordAdvertisementEnabled(_ enabled: Bool, id: String, reply: Reply? = nil) {
        advertisementStates[id] = enabled
        waiting.append((nil, { [weak self] result in
            if case .failure = result, let self { self.advertisementStates[id] = self.saved.advertisements[id] }
            reply?(result)
        }))
        scheduleFlush()
    }

    /// Advertising data changes of advertisement `id` kept for restarts (canonical JSON of
    /// `AdvertisementChanges`), as restored or last recorded.
    public func savedAdvertisementData(id: String) -> String? { advertisementData[id] }

    /// Records (or, with nil, forgets) the advertising data changes kept for restarts;
    /// saved at the end of this iteration, `reply` waits for that save. A failed save
    /// puts the previous record back.
    public func recordAdvertisementData(_ data: String?, id: String, reply: Reply? = nil) {
        advertisementData[id] = data
        waiting.append((nil, { [weak self] result in
            if case .failure = result, let self { self.advertisementData[id] = self.saved.advertisementData[id] }
            reply?(result)
        }))
        scheduleFlush()
    }

    /// The ATT handles bluetoothd last gave the attributes, as restored or last recorded.
    public var savedHandles: AttributeHandles { handles }

    /// Records the attributes' handles (bluetoothd accepted the tree); saved at the end of
    /// this iteration. A failed save is retried like a timer value's.
    public func recordHandles(_ handles: AttributeHandles) {
        guard handles != self.handles else { return }
        self.handles = handles
        scheduleFlush()
    }

    /// A reload's new persistence takes over what `previous` kept beside the values (which
    /// the database carries over itself: `AttributeDatabase.carryOver(from:)`): the
    /// handles, until the new tree is registered and its own are recorded; the counters of
    /// the characteristics that still have an `update`; the on/off states and data of the
    /// advertisements still defined. Recorded as any change is, so saved as one.
    public func carryOver(from previous: Persistence) {
        recordHandles(previous.savedHandles)
        for id in updatedIDs {
            if let counter = previous.savedCounter(id: id) { recordCounter(counter, id: id) }
        }
        for id in advertisementIDs {
            if let enabled = previous.savedAdvertisementEnabled(id: id) { recordAdvertisementEnabled(enabled, id: id) }
            if let data = previous.savedAdvertisementData(id: id) { recordAdvertisementData(data, id: id) }
        }
    }

    // MARK: - Flushing

    /// Saves now if anything is unsaved and completes every waiting reply (SIGTERM).
    @discardableResult
    public func flushNow() -> Result<Void, StateStoreError> {
        flush()
    }

    private func valueChanged(_ attribute: Attribute, _ origin: ValueChangeOrigin) {
        // The save already scheduled covers this change too; `persists` (a lookup by id)
        // is asked only when a save would be scheduled, not on every tick of a timer.
        switch origin {
        case .central, .control, .configuration:
            // Normally covered by a commit; this also saves writes nobody waits for
            // (write-without-response) and a reload's new initial values.
            if !flushScheduled && persists(attribute) { scheduleFlush() }
        case .timer:
            if !delayedSaveScheduled && persists(attribute) { scheduleDelayedSave() }
        case .restored:
            break
        }
    }

    private func scheduleFlush() {
        guard !flushScheduled else { return }
        flushScheduled = true
        scheduling.afterIteration { [weak self] in
            guard let self else { return }
            self.flushScheduled = false
            self.flush()
        }
    }

    private func scheduleDelayedSave() {
        guard !delayedSaveScheduled else { return }
        delayedSaveScheduled = true
        scheduling.after(timerSaveDelay) { [weak self] in
            guard let self else { return }
            self.delayedSaveScheduled = false
            self.flush()
        }
    }

    @discardableResult
    private func flush() -> Result<Void, StateStoreError> {
        let document = makeDocument()
        let replies = waiting
        waiting = []
        let result: Result<Void, StateStoreError>
        if document == saved {
            result = .success(())
        } else {
            do {
                try storage.save(document)
                saved = document
                saveCount += 1
                if failing {
                    failing = false
                    logger.notice("the state is saved again")
                }
                result = .success(())
            } catch {
                result = .failure(error)
                refuse(replies, error)
            }
        }
        for waiter in replies { waiter.reply(result) }
        return result
    }

    /// Rolls the written attributes back to their saved values and schedules a retry for
    /// anything else unsaved.
    private func refuse(_ replies: [(id: String?, reply: Reply)], _ error: StateStoreError) {
        var rolledBack: Set<String> = []
        for case let id? in replies.map(\.id) where rolledBack.insert(id).inserted {
            guard let attribute = database[id] else { continue }
            let previous = attribute.isCharacteristic ? saved.characteristics[id] : saved.descriptors[id]
            if let previous { database.set(attribute, to: previous.value, origin: .restored) }
        }
        if !replies.isEmpty {
            logger.error(
                "cannot save the state; refused the writes waiting for it",
                metadata: ["error": "\(error)", "writes": "\(replies.count)", "gatt.ids": "\(rolledBack.sorted())"])
        } else if !failing {
            logger.error("cannot save the state; will retry", metadata: ["error": "\(error)"])
        }
        failing = true
        if makeDocument() != saved { scheduleDelayedSave() }
    }

    private func makeDocument() -> StateDocument {
        var document = StateDocument()
        for attribute in database.attributes where persistentIDs.contains(attribute.id) {
            let value = StateDocument.SavedValue(
                uuid: attribute.uuid, value: attribute.value, minLength: attribute.minLength,
                maxLength: attribute.maxLength)
            if attribute.isCharacteristic {
                document.characteristics[attribute.id] = value
            } else {
                document.descriptors[attribute.id] = value
            }
        }
        document.sources = counters.compactMapValues { $0.value.map { StateDocument.SavedSource(counter: $0) } }
        document.advertisements = advertisementStates
        document.advertisementData = advertisementData
        document.handles = handles
        return document
    }
}

/// A value source's counter as `Persistence` keeps it; nil until restored or recorded.
private final class CounterCell {
    var value: Int64?
}
