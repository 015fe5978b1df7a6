// SPDX-License-Identifier: MIT
import Glibc

/// A system call needed to set up the loop failed.
public struct LoopError: Error, Sendable, CustomStringConvertible {
    /// The failing call, e.g. `"epoll_create1"`.
    public let call: String
    /// The `errno` it left.
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}
