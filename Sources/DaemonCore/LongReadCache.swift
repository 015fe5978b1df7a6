// SPDX-License-Identifier: MIT

/// The value a handler answered at offset 0, per attribute and device, so that the
/// follow-up reads of the same long read see the same bytes. Keeps the
/// `capacity` most recent entries.
struct LongReadCache {
    static let capacity = 32
    private var entries: [(key: String, bytes: [UInt8])] = []

    func bytes(of id: String, device: String?) -> [UInt8]? {
        let key = Self.key(id, device)
        return entries.last { $0.key == key }?.bytes
    }

    mutating func remember(_ bytes: [UInt8], of id: String, device: String?) {
        let key = Self.key(id, device)
        entries.removeAll { $0.key == key }
        entries.append((key, bytes))
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
    }

    private static func key(_ id: String, _ device: String?) -> String { id + "\u{0}" + (device ?? "") }
}
