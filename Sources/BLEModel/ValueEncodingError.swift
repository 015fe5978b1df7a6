// SPDX-License-Identifier: MIT

/// A value that cannot be encoded into its slot, e.g. `300 is out of range 0...255`.
///
/// `message` never contains a JSON path; callers that know the path prefix it.
public struct ValueEncodingError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
