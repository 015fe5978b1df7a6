// SPDX-License-Identifier: MIT

public import BLEModel

/// Why a write through `RequestService` was not accepted. The caller maps it to its own
/// world: the BlueZ layer to `org.bluez.Error.*`, the control API to `org.gattd.Error.*`.
public enum WriteFailure: Error, Equatable, Sendable {
    /// Refused before anything was stored: permission, offset, length, or the verdict of
    /// a deciding hook or handler (ATT application errors included).
    case refused(GATTError)
    /// Stored, but the state file could not be written: the value is back at its last
    /// saved one, so nothing was acknowledged and then lost.
    case notSaved(reason: String)
    /// `delivery: "all"`: the characteristic's queue of values not yet notified is full;
    /// nothing was stored. `ReadyToUpdate` says when there is room again.
    case queueFull(capacity: Int)

    /// The ATT result a central gets for this failure.
    public var gattError: GATTError {
        switch self {
        case .refused(let error): error
        // 0x0E rather than an application code: 0x80-0x9F belong to the profile, and
        // "unlikely" is what a central can make sense of.
        case .notSaved, .queueFull: .unlikely
        }
    }
}
