// SPDX-License-Identifier: MIT

import Glibc

/// Runs code in a forked child whose mount namespace has a fresh tmpfs on `/run`, with
/// `/run/systemd/journal/socket` a symlink to a socket the test owns. libsystemd's
/// `sd_journal_sendv` always writes to that fixed path; this is how a test points it at
/// a fake journald without touching the host. Needs root (CAP_SYS_ADMIN for unshare/mount).
enum PrivateJournalNamespace {
    /// Exit codes of the child, so a failure says which step broke.
    enum Step: Int32 {
        case done = 0, unshare = 90, makePrivate, mountRun, makeDirectories, link
    }

    /// Whether this process may create mount namespaces (probed in a child).
    static let isAvailable: Bool = {
        guard geteuid() == 0 else { return false }
        return (try? run(socketPath: "/dev/null", timeout: .seconds(10)) { }) == .done
    }()

    /// Forks, prepares the namespace, calls `body` in the child and `_exit`s.
    ///
    /// - Returns: the step the child finished with.
    /// - Throws: when fork fails or the child does not finish within `timeout` (then it is killed).
    static func run(socketPath: String, timeout: Duration, _ body: () -> Void) throws -> Step? {
        // The child's copy of `exitPipe[1]` closes when it exits: POLLHUP on the read end is
        // the "child finished" event the parent waits on, with a deadline.
        var exitPipe: [Int32] = [0, 0]
        let streamType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, streamType, 0, &exitPipe) == 0 else {
            throw TestFailure("socketpair failed: errno \(errno)")
        }
        let child = fork()
        guard child >= 0 else { throw TestFailure("fork failed: errno \(errno)") }
        if child == 0 {
            close(exitPipe[0])
            if let failed = prepare(linkingTo: socketPath) { _exit(failed.rawValue) }
            body()
            _exit(Step.done.rawValue)
        }
        close(exitPipe[1])
        defer { close(exitPipe[0]) }
        var poller = pollfd(fd: exitPipe[0], events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000)
        var ready: Int32
        repeat { ready = poll(&poller, 1, milliseconds) } while ready < 0 && errno == EINTR
        if ready <= 0 { kill(child, SIGKILL) }
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        guard ready > 0 else { throw TestFailure("child did not finish within \(timeout)") }
        let exited = (status & 0x7F) == 0
        return exited ? Step(rawValue: (status >> 8) & 0xFF) : nil
    }

    /// Child side: private mounts, tmpfs on /run, the journal socket symlink. `nil` when ready.
    private static func prepare(linkingTo socketPath: String) -> Step? {
        // unshare(2) is a GNU extension the Glibc module does not import; look it up.
        typealias Unshare = @convention(c) (Int32) -> Int32
        let cloneNewNamespace: Int32 = 0x0002_0000  // CLONE_NEWNS
        guard let symbol = dlsym(nil, "unshare"),
              unsafeBitCast(symbol, to: Unshare.self)(cloneNewNamespace) == 0
        else { return .unshare }
        guard mount(nil, "/", nil, UInt(MS_REC | MS_PRIVATE), nil) == 0 else { return .makePrivate }
        guard mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") == 0 else { return .mountRun }
        guard mkdir("/run/systemd", 0o755) == 0, mkdir("/run/systemd/journal", 0o755) == 0 else {
            return .makeDirectories
        }
        guard symlink(socketPath, "/run/systemd/journal/socket") == 0 else { return .link }
        return nil
    }
}
