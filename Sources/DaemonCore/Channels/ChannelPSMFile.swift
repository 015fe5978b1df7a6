// SPDX-License-Identifier: MIT

import SystemCalls

/// The PSMs the kernel picked for channels without a `psm`, kept in `channels.json` beside
/// the state file so a restart asks for the same ones (a phone may have kept the PSM it
/// read): `{"<channel id>": <psm>, ...}`, replaced atomically like the state file.
public struct ChannelPSMFile {
    public static let fileName = "channels.json"
    private let store: StateStore

    public init(directory: String) {
        store = StateStore(directory: directory, name: Self.fileName)
    }

    public var path: String { store.path }

    /// The PSMs kept; empty when there is no file or it cannot be read (a new PSM is then
    /// picked, which phones learn from the PSM characteristic).
    public func load() -> [String: UInt16] {
        guard let bytes = try? SystemCall.readFile(store.path, limit: 64 * 1024) else { return [:] }
        var result: [String: UInt16] = [:]
        // One `"id": number` pair per line, as `save` writes it; ids are [A-Za-z0-9_-].
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let id = parts[0].trimmingCharacters(in: " \t\"{,")
            let number = parts[1].trimmingCharacters(in: " \t,}")
            if let psm = UInt16(number), !id.isEmpty { result[id] = psm }
        }
        return result
    }

    /// Writes `psms` (when they differ from what is kept).
    public func save(_ psms: [String: UInt16]) throws(StateStoreError) {
        guard psms != load() else { return }
        try store.prepareDirectory()
        let lines = psms.sorted { $0.key < $1.key }.map { "  \"\($0.key)\": \($0.value)" }
        try store.write(Array(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8))
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let drop = Set(set)
        return String(self.drop { drop.contains($0) }.reversed().drop { drop.contains($0) }.reversed())
    }
}
