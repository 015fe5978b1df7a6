// SPDX-License-Identifier: MIT

/// A saved value that `Persistence.restore` did not apply, and why.
public struct DroppedValue: Sendable, Equatable, CustomStringConvertible {
    /// The id of the characteristic, descriptor, source or advertisement in the state file.
    public var id: String
    /// e.g. `no longer defined`, `UUID changed from 2a19 to 2a1a`, `length 3 is outside 4...8`.
    public var reason: String

    public init(id: String, reason: String) {
        self.id = id
        self.reason = reason
    }

    public var description: String { "\(id): \(reason)" }
}
