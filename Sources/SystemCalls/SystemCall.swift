// SPDX-License-Identifier: MIT

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call that failed, with the `errno` it left: the one error type of gattd's
/// system-call layer.
///
/// `description` reads `cannot write /var/lib/gattd/state.json.tmp-12-0: No space left on
/// device (errno 28)`, or `epoll_create1: Too many open files (errno 24)` without a path.
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The step that failed, e.g. `open`, `write`, `fsync`, `start`, `epoll_create1`.
    public var operation: String
    /// The file, directory or program it was about; empty when none.
    public var path: String
    /// The `errno` value.
    public var code: Int32

    public init(operation: String, path: String = "", code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// The C library's text for `code`.
    public var reason: String { String(cString: strerror(code)) }

    public var description: String {
        path.isEmpty ? "\(operation): \(reason) (errno \(code))" : "cannot \(operation) \(path): \(reason) (errno \(code))"
    }
}

/// The few loops every caller of `read`, `write`, `open` and `waitpid` needs, written once:
/// retry on `EINTR`, finish short reads and writes, bound what is read.
public enum SystemCall {
    /// Calls `call` again for as long as it returns -1 with `errno` `EINTR`; returns the
    /// first other result (`errno` is left as the call set it).
    @inlinable
    public static func retrying<Result: BinaryInteger>(_ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result != -1 || errno != EINTR { return result }
        }
    }

    /// `retrying(call)`, throwing `SystemCallError(operation, path, errno)` when it fails.
    @inlinable
    @discardableResult
    public static func check<Result: BinaryInteger>(
        _ operation: String, path: String = "", _ call: () -> Result
    ) throws(SystemCallError) -> Result {
        let result = retrying(call)
        guard result != -1 else { throw SystemCallError(operation: operation, path: path, code: errno) }
        return result
    }

    /// Writes all of `bytes` to `descriptor`, finishing short writes.
    /// - Throws: the first failed `write` (on a non-blocking descriptor, `EAGAIN` too).
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, path: String = "")
        throws(SystemCallError)
    {
        var offset = 0
        while offset < bytes.count {
            offset += try check("write", path: path) { write(descriptor, bytes.baseAddress! + offset, bytes.count - offset) }
        }
    }

    /// Reads `descriptor` to its end.
    /// - Throws: the first failed `read`; `EFBIG` when there is more than `limit` bytes.
    public static func readAll(_ descriptor: Int32, limit: Int, path: String = "") throws(SystemCallError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(65536, limit + 1))
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                retrying { read(descriptor, buffer.baseAddress!, buffer.count) }
            }
            guard count >= 0 else { throw SystemCallError(operation: "read", path: path, code: errno) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > limit { throw SystemCallError(operation: "read", path: path, code: EFBIG) }
        }
    }

    /// Opens `path` read-only (with `flags` added) and reads all of it.
    /// - Throws: the failed `open` or `read`; `EFBIG` when it is larger than `limit`.
    public static func readFile(_ path: String, limit: Int, flags: Int32 = 0) throws(SystemCallError) -> [UInt8] {
        let descriptor = try check("open", path: path) { open(path, O_RDONLY | O_CLOEXEC | flags) }
        defer { close(descriptor) }
        return try readAll(descriptor, limit: limit, path: path)
    }
}
