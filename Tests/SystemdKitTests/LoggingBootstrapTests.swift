// SPDX-License-Identifier: MIT

import Glibc
import Logging
import Testing

import SystemdKit

struct LoggingBootstrapTests {
    let stderrStream = StreamIdentity(device: 21, inode: 4242)

    @Test func journaldWhenStreamMatchesAndSocketExists() throws {
        let journal = try DatagramReceiver(name: "journal-socket")
        let backend = LoggingBootstrap.choose(
            environment: ["JOURNAL_STREAM": "21:4242"], journalSocketPath: journal.path,
            stderrIdentity: stderrStream)
        #expect(backend == .journald)
        #expect(LoggingBootstrap.makeHandler(for: backend, logLevel: .debug) is JournalLogHandler)
        #expect(LoggingBootstrap.makeHandler(for: backend, logLevel: .debug).logLevel == .debug)
    }

    @Test func stderrWithoutJournalStream() throws {
        let journal = try DatagramReceiver(name: "journal-socket")
        #expect(LoggingBootstrap.choose(
            environment: [:], journalSocketPath: journal.path, stderrIdentity: stderrStream) == .stderr)
        #expect(LoggingBootstrap.makeHandler(for: .stderr) is StderrLogHandler)
    }

    @Test func stderrWhenJournaldSocketIsMissingOrNotASocket() throws {
        let journal = try DatagramReceiver(name: "journal-socket")
        #expect(LoggingBootstrap.choose(
            environment: ["JOURNAL_STREAM": "21:4242"], journalSocketPath: journal.directory + "/absent",
            stderrIdentity: stderrStream) == .stderr)
        #expect(LoggingBootstrap.choose(
            environment: ["JOURNAL_STREAM": "21:4242"], journalSocketPath: journal.directory,
            stderrIdentity: stderrStream) == .stderr)
    }

    @Test(arguments: ["21:9999", "21", "x:y", ""])
    func stderrWhenStreamIsNotOurStderr(journalStream: String) throws {
        let journal = try DatagramReceiver(name: "journal-socket")
        #expect(LoggingBootstrap.choose(
            environment: ["JOURNAL_STREAM": journalStream], journalSocketPath: journal.path,
            stderrIdentity: stderrStream) == .stderr)
    }

    @Test func streamIdentityOfARealDescriptor() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var info = stat()
        try #require(fstat(fds[1], &info) == 0)
        let identity = try #require(StreamIdentity(fileDescriptor: fds[1]))
        #expect(identity == StreamIdentity(journalStream: "\(info.st_dev):\(info.st_ino)"))
        #expect(StreamIdentity(fileDescriptor: -1) == nil)
    }

    @Test func processEnvironmentReadsEnviron() {
        let environment = LoggingBootstrap.processEnvironment()
        #expect(environment["PATH"] == getenv("PATH").map { String(cString: $0) })
    }
}
