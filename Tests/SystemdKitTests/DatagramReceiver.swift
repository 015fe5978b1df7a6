// SPDX-License-Identifier: MIT

import Glibc

/// An AF_UNIX datagram socket bound in a fresh temporary directory, standing in for
/// systemd's notify socket or journald's native socket. Removed on deinit.
final class DatagramReceiver {
    let directory: String
    let path: String
    private let fd: Int32

    init(name: String = "socket") throws {
        var template = Array("/tmp/systemdkit-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        directory = String(cString: made)
        path = directory + "/" + name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw TestFailure("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw TestFailure("bind \(path) failed: errno \(errno)") }
    }

    deinit {
        close(fd)
        unlink(path)
        rmdir(directory)
    }

    /// The next datagram, or `nil` if none arrives within `timeout`.
    func receive(timeout: Duration = .seconds(5)) -> [UInt8]? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        var ready: Int32
        repeat { ready = poll(&poller, 1, milliseconds) } while ready < 0 && errno == EINTR
        guard ready > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { return nil }
        return Array(buffer[..<count])
    }

    /// The next datagram as text, or `nil` on timeout.
    func receiveText(timeout: Duration = .seconds(5)) -> String? {
        receive(timeout: timeout).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// A setup failure inside a test helper, shown with its reason.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
