// SPDX-License-Identifier: MIT

import Glibc
import SystemCalls

/// `state.json` in gattd's state directory, written atomically and durably.
///
/// `save` writes a new temporary file in the same directory (`O_EXCL`, mode 0600), writes
/// all of it, fsyncs it, renames it over `state.json` and fsyncs the directory, so after a
/// crash or power cut the file is either the old document or the new one, never a mix.
/// `load` never fails: a file that cannot be used is moved aside as
/// `state.json.damaged-<UTC time>-<n>` (the newest `keptDamagedFiles` are kept) and the
/// result says why. One gattd owns a directory; leftover temporary files of a killed
/// predecessor are removed by `load`.
public final class StateStore: StateStorage {
    public static let fileName = "state.json"
    static let temporaryPrefix = "state.json.tmp-"
    static let damagedPrefix = "state.json.damaged-"
    /// How many moved-aside files are kept; older ones are deleted.
    public static let keptDamagedFiles = 3
    /// A larger file is treated as damaged (a real one is a few kB).
    public static let maximumSize = 16 << 20

    public let directory: String
    private var temporaryCounter = 0

    /// The file this store replaces atomically: `state.json`, or another file of the
    /// same directory (`ChannelPSMFile`).
    public let name: String

    public init(directory: String, name: String = StateStore.fileName) {
        self.directory = directory
        self.name = name
    }

    /// `$STATE_DIRECTORY` (its first entry when systemd lists several, ':'-separated), else
    /// `--state-dir`, else `/var/lib/gattd`.
    public static func resolveDirectory(environment: String?, option: String?) -> String {
        if let environment, let first = environment.split(separator: ":").first, !first.isEmpty {
            return String(first)
        }
        if let option, !option.isEmpty { return option }
        return "/var/lib/gattd"
    }

    public var path: String { directory + "/" + name }

    /// Creates the directory (and missing parents, mode 0700) unless it exists.
    public func prepareDirectory() throws(StateStoreError) {
        var partial = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw StateStoreError(operation: "create directory", path: partial, code: errno)
            }
        }
    }

    // MARK: - Save

    public func save(_ document: StateDocument) throws(StateStoreError) {
        try write(document.encoded())
    }

    /// The atomic replace of `state.json` with `bytes`.
    func write(_ bytes: [UInt8]) throws(StateStoreError) {
        let (descriptor, temporary) = try createTemporary()
        do throws(StateStoreError) {
            try writeAll(bytes, to: descriptor, path: temporary)
            // GATTD_BREAK_*: builds that must fail the power-cut test (Tests/vm/run-powercut --break).
            #if !GATTD_BREAK_FILE_FSYNC
                guard fsync(descriptor) == 0 else {
                    throw StateStoreError(operation: "fsync", path: temporary, code: errno)
                }
            #endif
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard close(descriptor) == 0 else {
            let code = errno
            unlink(temporary)
            throw StateStoreError(operation: "close", path: temporary, code: code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw StateStoreError(operation: "rename", path: temporary, code: code)
        }
        #if !GATTD_BREAK_DIRECTORY_FSYNC
            try syncDirectory()
        #endif
    }

    private func createTemporary() throws(StateStoreError) -> (Int32, String) {
        while true {
            let temporary = directory + "/" + Self.temporaryPrefix + "\(getpid())-\(temporaryCounter)"
            temporaryCounter += 1
            do throws(SystemCallError) {
                let descriptor = try SystemCall.check("open", path: temporary) {
                    open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                }
                return (descriptor, temporary)
            } catch where error.code == EEXIST {
                continue
            }
        }
    }

    private func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StateStoreError) {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(SystemCallError) in
            try SystemCall.writeAll(descriptor, buffer, path: path)
        } }
        try result.get()
    }

    private func syncDirectory() throws(StateStoreError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StateStoreError(operation: "open", path: directory, code: errno) }
        defer { close(descriptor) }
        // EINVAL: the file system cannot sync directories; the rename is as durable as it gets.
        if fsync(descriptor) != 0 && errno != EINVAL {
            throw StateStoreError(operation: "fsync directory", path: directory, code: errno)
        }
    }

    // MARK: - Load

    /// Reads `state.json`, moving it aside when it cannot be used.
    public func load() -> StateLoadResult {
        removeLeftoverTemporaries()
        let bytes: [UInt8]
        switch readFile() {
        case .success(nil):
            return .fresh
        case .success(let contents?):
            bytes = contents
        case .failure(let reason):
            return .damaged(reason: reason.text, movedTo: moveAside())
        }
        do {
            return .loaded(try StateDocument(decoding: bytes))
        } catch {
            let reason: String
            switch error.kind {
            case .syntax: reason = bytes.isEmpty ? "empty (truncated)" : "truncated or corrupt: \(error)"
            case .shape: reason = "not a gattd state file: \(error)"
            case .futureVersion: reason = "written by a newer gattd: \(error)"
            }
            return .damaged(reason: reason, movedTo: moveAside())
        }
    }

    private struct Unreadable: Error {
        let text: String
    }

    /// The file's bytes, nil when it does not exist.
    private func readFile() -> Result<[UInt8]?, Unreadable> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            let code = errno
            if code == ENOENT { return .success(nil) }
            return .failure(Unreadable(text: "unreadable: \(String(cString: strerror(code)))"))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            return .failure(Unreadable(text: "unreadable: \(String(cString: strerror(errno)))"))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(Unreadable(text: "unreadable: not a regular file")) }
        guard info.st_size <= Self.maximumSize else {
            return .failure(Unreadable(text: "unreadable: \(info.st_size) bytes is larger than \(Self.maximumSize)"))
        }
        do throws(SystemCallError) {
            return .success(try SystemCall.readAll(descriptor, limit: Self.maximumSize, path: path))
        } catch where error.code == EFBIG {
            return .failure(Unreadable(text: "unreadable: larger than \(Self.maximumSize) bytes"))
        } catch {
            return .failure(Unreadable(text: "unreadable: \(error.reason)"))
        }
    }

    /// Renames `state.json` to `state.json.damaged-<UTC time>-<n>` and prunes old ones.
    /// `n` is one more than the largest already there, so names never repeat and the
    /// newest files are the ones with the largest `n`, whatever the clock did.
    private func moveAside() -> String? {
        let existing = entries(withPrefix: Self.damagedPrefix)
        let next = (existing.compactMap(Self.damagedSequence).max() ?? 0) + 1
        let candidate = directory + "/" + Self.damagedPrefix + Self.utcStamp() + "-\(next)"
        guard rename(path, candidate) == 0 else { return nil }
        _ = try? syncDirectory()
        pruneDamaged()
        return candidate
    }

    private func pruneDamaged() {
        let names = entries(withPrefix: Self.damagedPrefix).sorted {
            (Self.damagedSequence($0) ?? 0) < (Self.damagedSequence($1) ?? 0)
        }
        for name in names.dropLast(Self.keptDamagedFiles) {
            let full = directory + "/" + name
            if unlink(full) != 0 { rmdir(full) }
        }
    }

    /// The `n` of `state.json.damaged-<time>-<n>`.
    private static func damagedSequence(_ name: String) -> Int? {
        guard let dash = name.lastIndex(of: "-") else { return nil }
        return Int(name[name.index(after: dash)...])
    }

    private func removeLeftoverTemporaries() {
        for name in entries(withPrefix: Self.temporaryPrefix) {
            unlink(directory + "/" + name)
        }
    }

    private func entries(withPrefix prefix: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasPrefix(prefix) { names.append(name) }
        }
        return names
    }

    /// `20250314T101500Z`.
    static func utcStamp() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }
}
