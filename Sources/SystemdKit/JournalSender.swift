// SPDX-License-Identifier: MIT

import CSystemd
import Glibc

/// Hands prepared fields to journald through `sd_journal_sendv` (native protocol,
/// binary-safe values, no printf formatting).
enum JournalSender {
    /// Sends one entry; each element of `fields` is one `NAME=value` field.
    ///
    /// - Returns: 0 on success or `-errno` (e.g. `-ENOENT` when journald's socket is absent).
    static func send(_ fields: [String]) -> Int32 {
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(fields.count)
        for field in fields {
            let start = bytes.count
            bytes.append(contentsOf: field.utf8)
            ranges.append(start..<bytes.count)
        }
        return bytes.withUnsafeMutableBytes { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return -EINVAL }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer { iov in
                sd_journal_sendv(iov.baseAddress, Int32(iov.count))
            }
        }
    }
}
