// SPDX-License-Identifier: MIT

/// `{"counter": {...}}`: `start`, then `+ step` every tick, wrapping past `max` to `min`
/// (past `min` to `max` for a negative step).
///
/// After a restart it continues from the last value it produced (`resumeFrom`, from
/// `Persistence.savedCounter`), so the first tick yields `resumeFrom + step`; a saved
/// value outside `min...max` (the definition changed) is ignored. Every produced value is
/// passed to `record` (`Persistence.counterRecorder(id:)`).
public final class CounterSource: ValueSource {
    public let start: Int64
    public let step: Int64
    public let min: Int64
    public let max: Int64
    /// The last value produced (or restored); nil before the first tick of a fresh start.
    public private(set) var current: Int64?
    private let record: (Int64) -> Void

    public init(
        start: Int64, step: Int64, min: Int64, max: Int64, resumeFrom saved: Int64? = nil,
        record: @escaping (Int64) -> Void = { _ in }
    ) {
        precondition(min <= start && start <= max && step != 0, "validated by the configuration")
        self.start = start
        self.step = step
        self.min = min
        self.max = max
        self.record = record
        if let saved, (min...max).contains(saved) { current = saved }
    }

    public func next(_ done: @escaping (Result<SourceReading, SourceFailure>) -> Void) {
        let value: Int64
        if let current {
            let (sum, overflow) = current.addingReportingOverflow(step)
            if step > 0 {
                value = overflow || sum > max ? min : sum
            } else {
                value = overflow || sum < min ? max : sum
            }
        } else {
            value = start
        }
        current = value
        record(value)
        done(.success(.number(Double(value))))
    }
}
