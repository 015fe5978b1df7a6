// SPDX-License-Identifier: MIT

/// A `GattCharacteristic1.Flags` entry; raw values are exactly BlueZ's spellings
/// (docs/bluez-contract.md §3, `parse_chrc_flags`).
///
/// bluetoothd derives the ATT properties and permissions from these flags and enforces
/// the security variants (encryption, authentication, LE Secure Connections) itself.
public enum CharacteristicFlag: String, CaseIterable, Sendable {
    case broadcast = "broadcast"
    case read = "read"
    case writeWithoutResponse = "write-without-response"
    case write = "write"
    case notify = "notify"
    case indicate = "indicate"
    case authenticatedSignedWrites = "authenticated-signed-writes"
    case extendedProperties = "extended-properties"
    case reliableWrite = "reliable-write"
    case writableAuxiliaries = "writable-auxiliaries"
    case encryptRead = "encrypt-read"
    case encryptWrite = "encrypt-write"
    case encryptNotify = "encrypt-notify"
    case encryptIndicate = "encrypt-indicate"
    case encryptAuthenticatedRead = "encrypt-authenticated-read"
    case encryptAuthenticatedWrite = "encrypt-authenticated-write"
    case encryptAuthenticatedNotify = "encrypt-authenticated-notify"
    case encryptAuthenticatedIndicate = "encrypt-authenticated-indicate"
    case secureRead = "secure-read"
    case secureWrite = "secure-write"
    case secureNotify = "secure-notify"
    case secureIndicate = "secure-indicate"
    case authorize = "authorize"

    /// Sets the Read property: ATT reads reach gattd as `ReadValue`.
    public var allowsRead: Bool {
        [.read, .encryptRead, .encryptAuthenticatedRead, .secureRead].contains(self)
    }

    /// Grants write permission through an acknowledged write (Write Request, reliable or
    /// signed write): these reach gattd as `WriteValue` that gattd may refuse.
    public var allowsWrite: Bool {
        [.write, .encryptWrite, .encryptAuthenticatedWrite, .secureWrite, .reliableWrite, .authenticatedSignedWrites]
            .contains(self)
    }

    /// Sets the Write Without Response property.
    public var allowsWriteWithoutResponse: Bool { self == .writeWithoutResponse }

    /// Sets the Notify property (bluetoothd then creates the CCC descriptor).
    public var allowsNotify: Bool {
        [.notify, .encryptNotify, .encryptAuthenticatedNotify, .secureNotify].contains(self)
    }

    /// Sets the Indicate property (bluetoothd then creates the CCC descriptor).
    public var allowsIndicate: Bool {
        [.indicate, .encryptIndicate, .encryptAuthenticatedIndicate, .secureIndicate].contains(self)
    }
}

extension Sequence where Element == CharacteristicFlag {
    public var allowsRead: Bool { contains { $0.allowsRead } }
    public var allowsWrite: Bool { contains { $0.allowsWrite } }
    public var allowsWriteWithoutResponse: Bool { contains { $0.allowsWriteWithoutResponse } }
    public var allowsNotify: Bool { contains { $0.allowsNotify } }
    public var allowsIndicate: Bool { contains { $0.allowsIndicate } }
}
