// SPDX-License-Identifier: MIT
import Glibc

/// A private `dbus-daemon` for one test: started in `init`, killed in `deinit`.
///
/// Tests talk only to this bus, never to the host's session or system bus.
public final class PrivateBus {
    /// The bus address printed by the daemon (`unix:path=…,guid=…`).
    public let address: String
    private let pid: pid_t

    /// Whether `dbus-daemon` is on `PATH` (gate bus suites on this).
    public static var isAvailable: Bool { executable != nil }

    /// `dbus-daemon` as found on `PATH`, as a shell would find it.
    static var executable: String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/dbus-daemon"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `dbus-daemon --session` (or with `configFile`) and waits for its address.
    public init(configFile: String? = nil) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw StartError(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Close the read end first: if pipe() returned it as fd 3, closing it after the dup2
        // would close the address descriptor itself.
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_adddup2(&actions, fds[1], 3)
        // dbus-daemon's complaint that it cannot raise its fd limit (not root) is noise in
        // the test output people read; its stderr goes nowhere.
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = ["dbus-daemon", configFile.map { "--config-file=\($0)" } ?? "--session",
                         "--nofork", "--nopidfile", "--print-address=3"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // Test threads (libdispatch workers) block most signals and a spawned child inherits
        // that mask; reset it so the daemon can be terminated.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var child: pid_t = 0
        guard let executable = Self.executable else {
            close(fds[0])
            close(fds[1])
            throw StartError(description: "dbus-daemon is not on PATH (Debian: apt install dbus-daemon)")
        }
        let status = posix_spawn(&child, executable, &actions, &attributes, &argv, environ)
        close(fds[1])
        guard status == 0 else {
            close(fds[0])
            throw StartError(description: "posix_spawn dbus-daemon: \(status)")
        }
        pid = child
        var text: [UInt8] = []
        var byte: UInt8 = 0
        // A signal with a handler (Foundation's Process watches SIGCHLD in some suites) can
        // interrupt the read while the daemon is still starting: retry on EINTR.
        while true {
            let count = read(fds[0], &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1, byte != UInt8(ascii: "\n") else { break }
            text.append(byte)
        }
        close(fds[0])
        guard !text.isEmpty else {
            kill(child, SIGTERM)
            var ignored: Int32 = 0
            waitpid(child, &ignored, 0)
            throw StartError(description: "dbus-daemon printed no address")
        }
        address = String(decoding: text, as: UTF8.self)
    }

    deinit {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}
