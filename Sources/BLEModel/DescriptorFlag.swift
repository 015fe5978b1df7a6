// SPDX-License-Identifier: MIT

/// A `GattDescriptor1.Flags` entry; raw values are exactly BlueZ's spellings
/// (docs/bluez-contract.md §3, `parse_desc_flags`).
public enum DescriptorFlag: String, CaseIterable, Sendable {
    case read = "read"
    case write = "write"
    case encryptRead = "encrypt-read"
    case encryptWrite = "encrypt-write"
    case encryptAuthenticatedRead = "encrypt-authenticated-read"
    case encryptAuthenticatedWrite = "encrypt-authenticated-write"
    case secureRead = "secure-read"
    case secureWrite = "secure-write"
    case authorize = "authorize"

    /// Grants read permission: ATT reads reach gattd as `ReadValue`.
    public var allowsRead: Bool {
        [.read, .encryptRead, .encryptAuthenticatedRead, .secureRead].contains(self)
    }

    /// Grants write permission: ATT writes reach gattd as `WriteValue`.
    public var allowsWrite: Bool {
        [.write, .encryptWrite, .encryptAuthenticatedWrite, .secureWrite].contains(self)
    }
}

extension Sequence where Element == DescriptorFlag {
    public var allowsRead: Bool { contains { $0.allowsRead } }
    public var allowsWrite: Bool { contains { $0.allowsWrite } }
}
