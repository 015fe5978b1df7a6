// SPDX-License-Identifier: MIT

/// The value a handler answered at offset 0, per attribute and device, so that the
/// follow-up reads of the same long read see the same bytes. Keeps the
/// `capacity` most recent entries.
///
/// Over EATT one central can have a request in flight on each bearer, so a second long
/// read of the same attribute can start (offset 0) while the first is still being read in
/// pieces; asking the handler again then would replace the bytes the first one is reading
/// and it would stitch two values together. So while a long read of an entry is under way
/// (`readers` > 0, and it went on less than `pinLimit` ago), an offset-0 read of the same
/// central gets the same bytes and becomes one more reader; a read whose piece reaches the
/// end of the value ends one reader. A long read the central abandoned (its link dropped)
/// keeps its bytes for `pinLimit` at most.
struct LongReadCache {
    static let capacity = 32
    /// How long a long read under way keeps its bytes for new reads without going on.
    static let pinLimit = Duration.seconds(2)

    private struct Entry {
        let key: String
        let bytes: [UInt8]
        /// Long reads of `bytes` not read to the end yet.
        var readers: Int
        /// When one of them last went on.
        var touched: ContinuousClock.Instant
    }

    private var entries: [Entry] = []

    /// The bytes a read at `offset` > 0 continues, nil when none are kept for this central.
    /// `payload` is how many bytes its response carries at most (ATT MTU - 1): a piece that
    /// reaches the end finishes one reader.
    mutating func continueRead(
        of id: String, device: String?, offset: Int, payload: Int, now: ContinuousClock.Instant
    ) -> [UInt8]? {
        guard let index = index(Self.key(id, device)) else { return nil }
        let bytes = entries[index].bytes
        entries[index].touched = now
        if bytes.count - offset <= payload, entries[index].readers > 0 { entries[index].readers -= 1 }
        return bytes
    }

    /// The bytes an offset-0 read gets without asking the handler: those of a long read of
    /// the same attribute by the same central still under way; nil when none is.
    mutating func joinRead(
        of id: String, device: String?, payload: Int, now: ContinuousClock.Instant
    ) -> [UInt8]? {
        guard let index = index(Self.key(id, device)), entries[index].readers > 0,
            now - entries[index].touched < Self.pinLimit
        else { return nil }
        entries[index].touched = now
        if entries[index].bytes.count > payload { entries[index].readers += 1 }
        return entries[index].bytes
    }

    /// A handler's answer to an offset-0 read: one reader when it needs more than one piece.
    mutating func remember(_ bytes: [UInt8], of id: String, device: String?, payload: Int, now: ContinuousClock.Instant) {
        let key = Self.key(id, device)
        entries.removeAll { $0.key == key }
        entries.append(Entry(key: key, bytes: bytes, readers: bytes.count > payload ? 1 : 0, touched: now))
        if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
    }

    private func index(_ key: String) -> Int? { entries.lastIndex { $0.key == key } }

    private static func key(_ id: String, _ device: String?) -> String { id + "\u{0}" + (device ?? "") }
}
