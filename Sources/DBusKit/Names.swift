// SPDX-License-Identifier: MIT
internal import CDBus

/// Validation of D-Bus names before they reach libdbus (which aborts on invalid ones).
enum Names {
    static func validateInterface(_ name: String) throws(DBusError) {
        guard name.withCString({ dbus_validate_interface($0, nil) }) != 0 else {
            throw .invalidArgs("invalid interface name '\(name)'")
        }
    }

    static func validateMember(_ name: String) throws(DBusError) {
        guard name.withCString({ dbus_validate_member($0, nil) }) != 0 else {
            throw .invalidArgs("invalid member name '\(name)'")
        }
    }

    static func validateBusName(_ name: String) throws(DBusError) {
        guard name.withCString({ dbus_validate_bus_name($0, nil) }) != 0 else {
            throw .invalidArgs("invalid bus name '\(name)'")
        }
    }

    static var properties: String { Freedesktop.properties }
    static var introspectable: String { Freedesktop.introspectable }
    static var peer: String { Freedesktop.peer }
    static var objectManager: String { Freedesktop.objectManager }
    static var local: String { Freedesktop.local }

    /// `peer` as a C string that lives as long as the program.
    static var peerCString: UnsafePointer<CChar> { cString("org.freedesktop.DBus.Peer") }
    /// The prefix every standard interface (Properties, Introspectable, ObjectManager, Peer) shares.
    static var standardPrefix: UnsafePointer<CChar> { cString(standardPrefixText) }
    static var standardPrefixLength: Int { standardPrefixText.utf8CodeUnitCount }
    private static var standardPrefixText: StaticString { "org.freedesktop.DBus." }

    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
