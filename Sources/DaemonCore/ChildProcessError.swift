// SPDX-License-Identifier: MIT

import Glibc

/// A program that could not be started: `cannot start /usr/bin/foo: No such file or directory`.
public struct ChildProcessError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `pipe`, `start` or `pidfd_open`.
    public var operation: String
    /// `argv[0]`; empty for a failure before the program is known to matter (`pipe`).
    public var program: String
    /// The `errno` value.
    public var code: Int32

    public init(operation: String, program: String, code: Int32) {
        self.operation = operation
        self.program = program
        self.code = code
    }

    public var description: String {
        let target = program.isEmpty ? "" : " " + program
        return "cannot \(operation)\(target): \(String(cString: strerror(code)))"
    }
}
