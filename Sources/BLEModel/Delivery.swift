// SPDX-License-Identifier: MIT

/// How notifications of a characteristic treat values produced faster than they can go
/// out (`delivery`).
public enum Delivery: String, Sendable, Equatable, CaseIterable {
    /// The latest value wins: a value replaced before its slot is never sent (default).
    case latest
    /// Every value is queued (at most `queueLength`) and sent in order at the pacing
    /// rate; a full queue refuses `SetValue` until `ReadyToUpdate`.
    case all
}
