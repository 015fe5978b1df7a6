// SPDX-License-Identifier: MIT

import Glibc

/// A failed system call while reading or writing the state directory.
///
/// `description` reads `cannot write /var/lib/gattd/state.json.tmp-12-0: No space left on
/// device (errno 28)`. The disk-full, read-only and permission cases are `code` ENOSPC,
/// EROFS and EACCES/EPERM.
public struct StateStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The step that failed: `open`, `write`, `fsync`, `close`, `rename`, `fsync directory`, `create directory`.
    public var operation: String
    public var path: String
    /// The `errno` value.
    public var code: Int32

    public init(operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// The C library's text for `code`.
    public var reason: String { String(cString: strerror(code)) }

    public var description: String { "cannot \(operation) \(path): \(reason) (errno \(code))" }
}
