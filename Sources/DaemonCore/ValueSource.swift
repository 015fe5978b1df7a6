// SPDX-License-Identifier: MIT

/// What a value source produced on one tick, before it is encoded.
public enum SourceReading: Sendable, Equatable {
    case number(Double)
    case text(String)
    /// Used as the value as is (file sources with `"format": "bytes"`).
    case bytes([UInt8])
}

/// A producer of values for one characteristic (`update.source`).
///
/// Sources live on the loop thread. A reading is delivered exactly once per `next` call,
/// synchronously for counter, random and file sources, later (on the loop) for command
/// sources. `next` is never called while `isBusy`.
public protocol ValueSource: AnyObject {
    /// True while a reading is still under way (a command that has not exited yet).
    var isBusy: Bool { get }
    /// Produces the next reading, or a failure that leaves the current value in place.
    func next(_ done: @escaping (Result<SourceReading, SourceFailure>) -> Void)
    /// Stops any reading under way; `done` of that reading is not called afterwards.
    func cancel()
}

extension ValueSource {
    public var isBusy: Bool { false }
    public func cancel() {}
}
