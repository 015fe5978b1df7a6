// SPDX-License-Identifier: MIT

public import BLEModel

/// What a central may do with an attribute, derived once from its BlueZ flags.
///
/// bluetoothd enforces the security variants (`encrypt-*`, `secure-*`) itself and only
/// then calls gattd, so here every read-ish flag means "readable" and every write-ish
/// flag means "writable" (docs/bluez-contract.md §3).
public struct AttributeAccess: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = AttributeAccess(rawValue: 1 << 0)
    public static let write = AttributeAccess(rawValue: 1 << 1)
    /// `write-without-response`: bluetoothd acknowledges the write before asking gattd.
    public static let writeWithoutResponse = AttributeAccess(rawValue: 1 << 2)
    public static let notify = AttributeAccess(rawValue: 1 << 3)
    public static let indicate = AttributeAccess(rawValue: 1 << 4)

    public init(_ flags: [CharacteristicFlag]) {
        var access: AttributeAccess = []
        for flag in flags {
            if flag.allowsRead { access.insert(.read) }
            if flag.allowsWrite { access.insert(.write) }
            if flag.allowsWriteWithoutResponse { access.insert(.writeWithoutResponse) }
            if flag.allowsNotify { access.insert(.notify) }
            if flag.allowsIndicate { access.insert(.indicate) }
        }
        self = access
    }

    public init(_ flags: [DescriptorFlag]) {
        var access: AttributeAccess = []
        for flag in flags {
            if flag.allowsRead { access.insert(.read) }
            if flag.allowsWrite { access.insert(.write) }
        }
        self = access
    }

    /// Any way of writing, with or without response.
    public var isWritable: Bool { !intersection([.write, .writeWithoutResponse]).isEmpty }
    /// Notifications or indications can be enabled (bluetoothd creates a CCC).
    public var canNotify: Bool { !intersection([.notify, .indicate]).isEmpty }
}
