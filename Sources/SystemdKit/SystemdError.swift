// SPDX-License-Identifier: MIT

public import SystemCalls

/// An error from libsystemd or from a malformed request to it.
public enum SystemdError: Error, Equatable, CustomStringConvertible {
    /// A libsystemd call returned `-errno` (the error carries the positive code).
    case system(SystemCallError)
    /// A notification assignment could not be encoded: keys must be non-empty and free of
    /// `=` and newlines, values free of newlines (the protocol is newline-separated).
    case invalidAssignment(key: String, reason: String)

    public var description: String {
        switch self {
        case .system(let error):
            return error.description
        case .invalidAssignment(let key, let reason):
            return "invalid sd_notify assignment \"\(key)\": \(reason)"
        }
    }
}

/// Checks a libsystemd-style return value: negative means `-errno`.
///
/// - Returns: `result` unchanged when it is zero or positive.
/// - Throws: `SystemdError.system` with the positive code otherwise.
@discardableResult
public func checkErrno(_ result: Int32, _ operation: String) throws(SystemdError) -> Int32 {
    guard result < 0 else { return result }
    throw .system(SystemCallError(operation: operation, code: -result))
}
