// SPDX-License-Identifier: MIT

import Glibc

/// The device and inode of an open file, the pair systemd puts in `JOURNAL_STREAM`
/// so a process can tell whether its stderr is still the journal stream it was given.
public struct StreamIdentity: Equatable, Sendable {
    public var device: UInt64
    public var inode: UInt64

    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// Parses `JOURNAL_STREAM`'s `<device>:<inode>` (both decimal); `nil` if malformed.
    public init?(journalStream: String) {
        let parts = journalStream.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
            return nil
        }
        self.init(device: device, inode: inode)
    }

    /// The identity of an open descriptor via `fstat`; `nil` if it is not open.
    public init?(fileDescriptor: Int32) {
        var info = stat()
        guard fstat(fileDescriptor, &info) == 0 else { return nil }
        self.init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
