// SPDX-License-Identifier: MIT

internal import DBusKit

/// One D-Bus property of an exported object, written once: its name, its D-Bus type, and
/// how its value is read from `Source` (nil: not set, left out of `GetAll` and
/// `GetManagedObjects`). An object's interface description and its `property(_:interface:)`
/// both come from the same rows, so they cannot disagree.
struct PropertyRow<Source>: Sendable {
    let name: String
    let signature: String
    let access: DBusProperty.Access
    let value: @Sendable (Source) -> DBusValue?

    init(
        name: String, signature: String, access: DBusProperty.Access = .read,
        _ value: @escaping @Sendable (Source) -> DBusValue?
    ) {
        self.name = name
        self.signature = signature
        self.access = access
        self.value = value
    }

    /// The `DBusProperty` this row declares.
    var declaration: DBusProperty { DBusProperty(name, signature: signature, access: access) }
}

extension Array {
    /// The value of the row called `name` for `source`; nil when there is no such row.
    func value<Source>(of name: String, for source: Source) -> DBusValue? where Element == PropertyRow<Source> {
        first { $0.name == name }?.value(source)
    }
}
