// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Foundation
import Glibc
import Testing

private func withDirectory(_ body: (TemporaryDirectory) throws -> Void) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    try body(directory)
}

private func damagedName(_ result: StateLoadResult) -> String? {
    guard case .damaged(_, let movedTo?) = result else { return nil }
    return String(movedTo.split(separator: "/").last!)
}

/// Mounting a tmpfs (full disk, read-only file system) needs root (CAP_SYS_ADMIN): these
/// tests are skipped, and reported so, for other users. CI runs them as root and sets
/// GATTD_ROOT_TESTS=1, which makes them run (and fail) rather than skip when not root.
private let rootOnly = ConditionTrait.enabled(
    if: getuid() == 0 || ProcessInfo.processInfo.environment["GATTD_ROOT_TESTS"] == "1",
    "needs root to mount a tmpfs (set GATTD_ROOT_TESTS=1 to require it)")

@Suite("State store: state.json written atomically, damage moved aside", .serialized)
struct StateStoreTests {
    @Test("the directory is $STATE_DIRECTORY's first entry, else --state-dir, else /var/lib/gattd")
    func directoryChoice() {
        #expect(StateStore.resolveDirectory(environment: "/run/a:/run/b", option: "/opt") == "/run/a")
        #expect(StateStore.resolveDirectory(environment: "/var/lib/gattd-x", option: nil) == "/var/lib/gattd-x")
        #expect(StateStore.resolveDirectory(environment: "", option: "/opt/state") == "/opt/state")
        #expect(StateStore.resolveDirectory(environment: nil, option: nil) == "/var/lib/gattd")
    }

    @Test("no file loads as fresh; a saved document loads back, mode 0600, no temporary left")
    func saveAndLoad() throws {
        try withDirectory { directory in
            let store = StateStore(directory: directory.path)
            #expect(store.load() == .fresh)
            try store.save(sampleDocument("one"))
            try store.save(sampleDocument("two"))
            #expect(store.load() == .loaded(sampleDocument("two")))
            #expect(try directory.names() == ["state.json"])
            var info = stat()
            #expect(stat(directory.statePath, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
        }
    }

    @Test("prepareDirectory creates missing parents")
    func prepare() throws {
        try withDirectory { directory in
            let store = StateStore(directory: directory.path + "/a/b")
            try store.prepareDirectory()
            try store.save(sampleDocument())
            #expect(store.load() == .loaded(sampleDocument()))
        }
    }

    @Test("a full disk fails the save with ENOSPC and leaves the old file intact", rootOnly)
    func diskFull() throws {
        try withDirectory { directory in
            try #require(directory.mountTmpfs(size: "64k"), "mounting a tmpfs failed")
            let store = StateStore(directory: directory.path)
            try store.save(sampleDocument("old"))
            do throws(StateStoreError) {
                try store.save(sampleDocument("new", size: 100_000))
                Issue.record("a 100 kB save succeeded on a 64 kB file system")
            } catch {
                #expect(error.code == ENOSPC)
                #expect(error.description.contains("No space left on device"))
            }
            #expect(store.load() == .loaded(sampleDocument("old")))
            #expect(try directory.names() == ["state.json"])
        }
    }

    @Test("a read-only directory fails the save with EROFS and leaves the old file intact", rootOnly)
    func readOnly() throws {
        try withDirectory { directory in
            try #require(directory.mountTmpfs(size: "1m"), "mounting a tmpfs failed")
            let store = StateStore(directory: directory.path)
            try store.save(sampleDocument("old"))
            #expect(directory.remountReadOnly())
            do throws(StateStoreError) {
                try store.save(sampleDocument("new"))
                Issue.record("the save succeeded on a read-only file system")
            } catch {
                #expect(error.code == EROFS)
                #expect(error.operation == "open")
            }
            #expect(store.load() == .loaded(sampleDocument("old")))
        }
    }

    @Test(
        "a damaged file is moved aside with its bytes and the next start is fresh",
        arguments: [
            ("truncated", Array(sampleDocument().encoded().prefix(40)), "truncated or corrupt"),
            ("empty", [], "empty (truncated)"),
            ("garbage", [0x00, 0xFF, 0x13, 0x37, 0x42], "truncated or corrupt"),
            ("wrong shape", Array(#"{"version": 1, "characteristics": []}"#.utf8), "not a gattd state file"),
            ("future version", Array(#"{"version": 7, "everything": "new"}"#.utf8), "written by a newer gattd"),
        ])
    func damaged(name: String, bytes: [UInt8], reason: String) throws {
        try withDirectory { directory in
            try directory.write("state.json", bytes)
            let store = StateStore(directory: directory.path)
            let result = store.load()
            guard case .damaged(let text, let movedTo?) = result else {
                Issue.record("\(name): expected damaged, got \(result)")
                return
            }
            #expect(text.hasPrefix(reason))
            #expect(movedTo.hasPrefix(directory.path + "/state.json.damaged-"))
            #expect(directory.contents(damagedName(result)!) == bytes)
            #expect(store.load() == .fresh)
            try store.save(sampleDocument())
            #expect(store.load() == .loaded(sampleDocument()))
        }
    }

    @Test("an unreadable state.json (a directory in its place; root ignores chmod 000) is moved aside")
    func unreadable() throws {
        try withDirectory { directory in
            #expect(mkdir(directory.statePath, 0o700) == 0)
            let store = StateStore(directory: directory.path)
            let result = store.load()
            guard case .damaged(let reason, _) = result else {
                Issue.record("expected damaged, got \(result)")
                return
            }
            #expect(reason == "unreadable: not a regular file")
            #expect(damagedName(result) != nil)
            try store.save(sampleDocument())
            #expect(store.load() == .loaded(sampleDocument()))
        }
    }

    @Test("at most three damaged files are kept, the newest ones")
    func keepsFew() throws {
        try withDirectory { directory in
            let store = StateStore(directory: directory.path)
            var moved: [String] = []
            for round in 0..<5 {
                try directory.write("state.json", Array("garbage \(round)".utf8))
                moved.append(try #require(damagedName(store.load())))
            }
            let kept = try directory.names()
            #expect(kept == Array(moved.suffix(3)).sorted())
            #expect(directory.contents(moved.last!) == Array("garbage 4".utf8))
        }
    }

    @Test("temporary files a killed gattd left behind are removed on load")
    func leftovers() throws {
        try withDirectory { directory in
            let store = StateStore(directory: directory.path)
            try store.save(sampleDocument())
            try directory.write("state.json.tmp-99999-0", Array("half a docu".utf8))
            #expect(store.load() == .loaded(sampleDocument()))
            #expect(try directory.names() == ["state.json"])
        }
    }
}
