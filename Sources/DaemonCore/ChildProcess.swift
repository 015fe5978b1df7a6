// SPDX-License-Identifier: MIT

internal import CLinux
import Glibc
public import Mainloop
import SystemCalls

/// One program run without a shell, supervised by the event loop: never blocks it.
///
/// - The program is found on `PATH` when `argv[0]` has no `/` (`posix_spawnp`); its
///   arguments are exactly `argv`, no word splitting, no expansion.
/// - It starts with an empty signal mask, default signal dispositions (SIGPIPE included),
///   the daemon's environment plus `environment`, in a new process group, with `stdin`
///   fed through a pipe (then closed), stdout read through a pipe (the first
///   `maximumOutput` bytes are kept, the rest is read and dropped), and stderr inherited
///   (the journal under systemd).
/// - Exit is observed through a pidfd on the loop; the child is reaped before
///   `completion` runs. Output written before the exit is all delivered, even when a
///   grandchild keeps the pipe open.
/// - After `timeout` the whole process group gets SIGKILL and the outcome is `.timedOut`.
/// - `completion` runs exactly once, on the loop, unless `start` throws.
///
/// The object keeps itself alive (through its loop registrations) until it completes.
/// gattd ignores SIGPIPE process-wide from the first start on, so a child that exits
/// without reading its stdin cannot kill the daemon.
public final class ChildProcess {
    /// How the program ended.
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// `exit(status)`.
        case exited(Int32)
        /// Killed by a signal it did not catch (not by the timeout).
        case signaled(Int32)
        /// Killed by gattd after the timeout.
        case timedOut

        public var description: String {
            switch self {
            case .exited(let status): "exit status \(status)"
            case .signaled(let signal): "killed by signal \(signal)"
            case .timedOut: "timed out"
            }
        }
    }

    /// What `completion` receives.
    public struct Completion: Sendable, Equatable {
        public var outcome: Outcome
        /// Standard output, at most `maximumOutput` bytes.
        public var output: [UInt8]
        /// True when the program wrote more than `maximumOutput` bytes.
        public var outputTruncated: Bool
    }

    /// Bytes of stdout kept.
    public static let maximumOutput = 64 * 1024

    /// The child's process id (also its process group id).
    public let pid: Int32
    private let loop: EventLoop
    private let completion: (Completion) -> Void
    private var pidFD: Int32
    private var stdoutFD: Int32
    private var stdinFD: Int32
    private var pendingInput: ArraySlice<UInt8>
    private var output: [UInt8] = []
    private var truncated = false
    private var timedOut = false
    private var exitWatch: IOWatch?
    private var outputWatch: IOWatch?
    private var inputWatch: IOWatch?
    private var timer: LoopTimer?
    /// False once `completion` has run.
    public private(set) var isRunning = true

    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Starts `argv` now.
    /// - Throws: `ChildProcessError` when a pipe, the spawn (program not found, not
    ///   executable) or the pidfd fails; nothing is left running then.
    public static func start(
        argv: [String], environment: [String: String] = [:], stdin: [UInt8] = [], timeout: Duration,
        loop: EventLoop, completion: @escaping (Completion) -> Void
    ) throws(ChildProcessError) -> ChildProcess {
        precondition(!argv.isEmpty, "argv names a program")
        Self.ignoreSIGPIPE
        let input = try Self.pipe()
        let out: (read: Int32, write: Int32)
        do throws(ChildProcessError) {
            out = try Self.pipe()
        } catch {
            close(input.read)
            close(input.write)
            throw error
        }
        let spawned = Self.spawn(argv: argv, environment: environment, stdin: input.read, stdout: out.write)
        close(input.read)
        close(out.write)
        let pid: Int32
        switch spawned {
        case .success(let spawnedPID):
            pid = spawnedPID
        case .failure(let error):
            close(input.write)
            close(out.read)
            throw error
        }
        let pidFD = pidfd_open(pid, 0)
        guard pidFD >= 0 else {
            let code = errno
            Glibc.kill(-pid, SIGKILL)
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = SystemCall.retrying { waitpid(pid, &status, 0) }
            close(input.write)
            close(out.read)
            throw ChildProcessError(operation: "pidfd_open", path: argv[0], code: code)
        }
        _ = fcntl(input.write, F_SETFL, O_NONBLOCK)
        _ = fcntl(out.read, F_SETFL, O_NONBLOCK)
        let child = ChildProcess(
            pid: pid, pidFD: pidFD, stdoutFD: out.read, stdinFD: input.write, input: stdin, loop: loop,
            completion: completion)
        child.begin(timeout: timeout)
        return child
    }

    /// Starts `argv` now with `socket` as its standard input and output (an inetd-style
    /// server: an L2CAP channel's relayed end). No timeout: it runs until it exits; its
    /// stdout is not read by gattd.
    /// - Throws: `ChildProcessError` when the spawn or the pidfd fails; nothing is left
    ///   running then, and `socket` stays open (the caller's).
    public static func start(
        argv: [String], environment: [String: String] = [:], connectedTo socket: Int32, loop: EventLoop,
        completion: @escaping (Completion) -> Void
    ) throws(ChildProcessError) -> ChildProcess {
        precondition(!argv.isEmpty, "argv names a program")
        Self.ignoreSIGPIPE
        let pid: Int32
        switch Self.spawn(argv: argv, environment: environment, stdin: socket, stdout: socket) {
        case .success(let spawnedPID): pid = spawnedPID
        case .failure(let error): throw error
        }
        let pidFD = pidfd_open(pid, 0)
        guard pidFD >= 0 else {
            let code = errno
            Glibc.kill(-pid, SIGKILL)
            Glibc.kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = SystemCall.retrying { waitpid(pid, &status, 0) }
            throw ChildProcessError(operation: "pidfd_open", path: argv[0], code: code)
        }
        let child = ChildProcess(
            pid: pid, pidFD: pidFD, stdoutFD: -1, stdinFD: -1, input: [], loop: loop, completion: completion)
        child.begin(timeout: nil)
        return child
    }

    private init(
        pid: pid_t, pidFD: Int32, stdoutFD: Int32, stdinFD: Int32, input: [UInt8], loop: EventLoop,
        completion: @escaping (Completion) -> Void
    ) {
        self.pid = pid
        self.pidFD = pidFD
        self.stdoutFD = stdoutFD
        self.stdinFD = stdinFD
        self.pendingInput = input[...]
        self.loop = loop
        self.completion = completion
    }

    private func begin(timeout: Duration?) {
        exitWatch = loop.watch(fd: pidFD, events: .readable) { [self] _ in self.exited() }
        if stdoutFD >= 0 {
            outputWatch = loop.watch(fd: stdoutFD, events: .readable) { [self] _ in self.readOutput() }
        }
        writeInput()
        if stdinFD >= 0 {
            inputWatch = loop.watch(fd: stdinFD, events: .writable) { [self] _ in self.writeInput() }
        }
        guard let timeout else { return }
        timer = loop.timer(after: timeout) { [self] in
            self.timedOut = true
            self.kill()
        }
    }

    /// Sends SIGKILL to the child's process group now; `completion` still runs once it is reaped.
    public func kill() {
        deliver(SIGKILL)
    }

    /// Sends SIGTERM to the child's process group (the program may clean up); for when the
    /// daemon stops and will not wait for the outcome.
    public func terminate() {
        deliver(SIGTERM)
    }

    private func deliver(_ number: Int32) {
        guard isRunning else { return }
        Glibc.kill(-pid, number)
        Glibc.kill(pid, number)
    }

    // MARK: - Pipes

    private func writeInput() {
        guard stdinFD >= 0 else { return }
        while !pendingInput.isEmpty {
            let written = pendingInput.withUnsafeBytes { bytes in
                SystemCall.retrying { write(stdinFD, bytes.baseAddress!, bytes.count) }
            }
            if written < 0 {
                if errno == EAGAIN { return }
                break  // EPIPE: the child does not read its input.
            }
            pendingInput = pendingInput.dropFirst(written)
        }
        inputWatch?.cancel()
        inputWatch = nil
        close(stdinFD)
        stdinFD = -1
    }

    /// Reads what is available; closes the pipe at EOF.
    private func readOutput() {
        guard stdoutFD >= 0 else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                SystemCall.retrying { read(stdoutFD, buffer.baseAddress!, buffer.count) }
            }
            if count < 0 {
                if errno == EAGAIN { return }
                break
            }
            if count == 0 { break }
            let room = Self.maximumOutput - output.count
            if count > room { truncated = true }
            output.append(contentsOf: chunk[..<min(count, room)])
        }
        outputWatch?.cancel()
        outputWatch = nil
        close(stdoutFD)
        stdoutFD = -1
    }

    // MARK: - Exit

    private func exited() {
        var status: Int32 = 0
        var result: pid_t
        result = SystemCall.retrying { waitpid(pid, &status, WNOHANG) }
        guard result == pid else { return }  // Not yet (spurious wake-up).
        // Everything the child wrote is in the pipe now; a grandchild holding it open
        // must not delay the completion.
        readOutput()
        if stdoutFD >= 0 {
            outputWatch?.cancel()
            outputWatch = nil
            close(stdoutFD)
            stdoutFD = -1
        }
        if stdinFD >= 0 {
            inputWatch?.cancel()
            inputWatch = nil
            close(stdinFD)
            stdinFD = -1
        }
        exitWatch?.cancel()
        exitWatch = nil
        close(pidFD)
        pidFD = -1
        timer?.cancel()
        timer = nil
        isRunning = false
        let outcome: Outcome
        if timedOut {
            outcome = .timedOut
        } else if status & 0x7f == 0 {
            outcome = .exited((status >> 8) & 0xff)
        } else {
            outcome = .signaled(status & 0x7f)
        }
        completion(Completion(outcome: outcome, output: output, outputTruncated: truncated))
    }

    // MARK: - Spawning

    /// Why `program` (an `argv[0]`: a path, or a name looked up on `PATH`) cannot be
    /// started, or nil when an executable file is there. A check before a decision that
    /// cannot be taken back (an L2CAP channel accepted); the start itself can still fail.
    public static func cannotRun(_ program: String) -> String? {
        if program.contains("/") {
            return access(program, X_OK) == 0 ? nil : "\(program): \(String(cString: strerror(errno)))"
        }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + program
            var info = stat()
            if access(candidate, X_OK) == 0, stat(candidate, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
                return nil
            }
        }
        return "\(program): not found on PATH"
    }

    private static func pipe() throws(ChildProcessError) -> (read: Int32, write: Int32) {
        // pipe2 is not exported to Swift; the loop thread is the only one spawning in
        // the daemon, so nothing can inherit the descriptors between the two calls.
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else {
            throw ChildProcessError(operation: "pipe", code: errno)
        }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        return (fds[0], fds[1])
    }

    /// `posix_spawnp` with the child's descriptors, mask, dispositions and group set up.
    private static func spawn(
        argv: [String], environment: [String: String], stdin: Int32, stdout: Int32
    ) -> Result<Int32, ChildProcessError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let arguments = argv.map { strdup($0) } + [nil]
        let variables = Self.environment(adding: environment).map { strdup($0) } + [nil]
        defer {
            for pointer in arguments { free(pointer) }
            for pointer in variables { free(pointer) }
        }
        var pid: Int32 = 0
        let result = posix_spawnp(&pid, argv[0], &actions, &attributes, arguments, variables)
        return result == 0 ? .success(pid) : .failure(ChildProcessError(operation: "start", path: argv[0], code: result))
    }

    /// The daemon's environment with `extra` added (replacing variables of the same name).
    static func environment(adding extra: [String: String]) -> [String] {
        var entries: [String] = []
        var cursor: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        while let current = cursor, let entry = current.pointee {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            if let name, extra[name] == nil { entries.append(text) }
            cursor = current + 1
        }
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) { entries.append(name + "=" + value) }
        return entries
    }
}
