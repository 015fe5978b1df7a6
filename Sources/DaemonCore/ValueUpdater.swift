// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging

/// The timed update of one characteristic: on each tick asks its source for a reading,
/// renders it through `encode` and sets the value with origin `.timer`.
///
/// - A tick that finds the source busy (a command still running), or the
///   characteristic's notification queue full (`delivery: "all"`), is skipped and counted.
/// - A failed reading, a rendering error (number out of the slot's range) or a value
///   outside the characteristic's `minLength...maxLength` keeps the current value; each
///   kind of failure is logged once (`FailureLog`), and the recovery once.
/// - With `notifyUnchanged` every tick notifies, even with an equal value; otherwise the
///   database drops unchanged values.
public final class ValueUpdater {
    public let attribute: Attribute
    public let definition: UpdateDefinition
    public let source: any ValueSource
    /// Where the values go: the database of the runtime the updater belongs to, whose
    /// notifier says whether the characteristic's notification queue takes another value.
    /// The runtime owns the updaters and holds them no other way, so neither keeps the
    /// other alive.
    private let database: AttributeDatabase
    private let notifier: Notifier
    private let failures: FailureLog
    private var cancelTimer: (() -> Void)?
    /// Ticks handled (readings requested).
    public private(set) var ticks = 0
    /// Ticks skipped because the previous reading was still under way.
    public private(set) var skippedTicks = 0
    /// Values set successfully.
    public private(set) var updates = 0
    /// What a reading lands in; made once, not a new closure (and weak reference) per tick.
    private lazy var landReading: (Result<SourceReading, SourceFailure>) -> Void = { [weak self] result in
        self?.apply(result)
    }

    public init(
        attribute: Attribute, definition: UpdateDefinition, source: any ValueSource, database: AttributeDatabase,
        notifier: Notifier, logger: Logger
    ) {
        self.attribute = attribute
        self.definition = definition
        self.source = source
        self.database = database
        self.notifier = notifier
        failures = FailureLog(logger: logger, metadata: ["gatt.id": "\(attribute.id)"])
    }

    /// Whether the timer should run now: someone is subscribed, or `whileUnsubscribed`.
    public var wantsToRun: Bool { definition.whileUnsubscribed || attribute.isNotifying }

    /// Whether the timer is running.
    public var isRunning: Bool { cancelTimer != nil }

    /// The kind of failure currently being suppressed in the log, nil when healthy.
    public var failureKind: String? { failures.currentKind }
    /// Failures logged so far (repeats of one kind are logged once).
    public var loggedFailures: Int { failures.loggedFailures }

    /// Starts the timer (first tick at once, then every `everyMs`); no-op when running.
    public func start(_ timers: UpdateTimers) {
        guard cancelTimer == nil else { return }
        cancelTimer = timers.repeating(.zero, .milliseconds(definition.everyMs)) { [weak self] in self?.tick() }
    }

    /// Stops the timer. A reading under way still lands (the value stays fresh for reads).
    public func stop() {
        cancelTimer?()
        cancelTimer = nil
    }

    /// One tick; the timer calls it.
    public func tick() {
        guard !source.isBusy, hasRoom else {
            skippedTicks += 1
            return
        }
        ticks += 1
        source.next(landReading)
    }

    private func apply(_ result: Result<SourceReading, SourceFailure>) {
        let reading: SourceReading
        switch result {
        case .success(let value):
            reading = value
        case .failure(let failure):
            failures.failed("value source failed", kind: failure.kind, detail: failure.detail)
            return
        }
        let bytes: [UInt8]
        do throws(ValueEncodingError) {
            bytes = try render(reading)
        } catch {
            failures.failed("value does not fit the encode template", kind: "encode", detail: "\(error)")
            return
        }
        let origin = ValueChangeOrigin.timer(forceNotify: definition.notifyUnchanged)
        guard case .success = set(bytes, origin: origin) else {
            let bounds = "\(attribute.minLength)...\(attribute.maxLength)"
            failures.failed(
                "rendered value has a length outside the characteristic's bounds; skipped",
                kind: "length outside \(bounds)", detail: "\(bytes.count) bytes")
            return
        }
        updates += 1
        failures.succeeded("value source works again")
    }

    private var hasRoom: Bool { notifier.hasRoom(attribute) }

    private func set(_ bytes: [UInt8], origin: ValueChangeOrigin) -> Result<Void, GATTError> {
        database.set(attribute, to: bytes, origin: origin)
    }

    private func render(_ reading: SourceReading) throws(ValueEncodingError) -> [UInt8] {
        switch reading {
        case .bytes(let bytes): return bytes
        case .number(let number): return try (definition.encode ?? .uint8Slot).render(number: number)
        case .text(let text): return try (definition.encode ?? .utf8Slot).render(text: text)
        }
    }
}
