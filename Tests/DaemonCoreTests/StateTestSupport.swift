// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Foundation
import Glibc

/// A fresh directory under /tmp, removed (and unmounted if needed) by `remove()`.
final class TemporaryDirectory {
    let path: String
    private var mounted = false

    init() throws {
        var template = Array("/tmp/gattd-state-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        path = String(cString: result)
    }

    var statePath: String { path + "/state.json" }

    /// Mounts a tmpfs of `size` here; false (and nothing mounted) when not permitted.
    func mountTmpfs(size: String) -> Bool {
        guard getuid() == 0, mount("tmpfs", path, "tmpfs", 0, "size=\(size),mode=0700") == 0 else { return false }
        mounted = true
        return true
    }

    func remountReadOnly() -> Bool {
        mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), nil) == 0
    }

    func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    func contents(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path + "/" + name).map { Array($0) }
    }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + name))
    }

    func remove() {
        if mounted { umount2(path, Int32(MNT_DETACH)) }
        try? FileManager.default.removeItem(atPath: path)
    }
}

func sampleDocument(_ text: String = "saved", size: Int = 0) -> StateDocument {
    var document = StateDocument(
        characteristics: [
            "label": .init(
                uuid: BluetoothUUID("12345678-1234-5678-1234-56789abcdef1")!, value: Array(text.utf8), minLength: 1,
                maxLength: 20)
        ],
        advertisements: ["main": true])
    // Padding entries make the file `size` bytes or more (a 512-byte value is 1024 hex digits).
    var index = 0
    while document.encoded().count < size {
        document.descriptors["pad-\(index)"] = .init(
            uuid: BluetoothUUID(uuid16: 0x2901), value: [UInt8](repeating: 0x5A, count: 512), minLength: 0, maxLength: 512)
        index += 1
    }
    return document
}
