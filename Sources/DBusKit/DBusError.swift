// SPDX-License-Identifier: MIT

/// A D-Bus error: a dotted error name and a human-readable message.
///
/// Error replies received from peers arrive as this type (`name` is the reply's error name,
/// `message` its first string argument or ""); handlers answer calls with it through
/// `MethodCall.fail(_:)`.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error name, e.g. `org.freedesktop.DBus.Error.InvalidArgs`.
    public var name: String
    /// Free-form explanation for humans; may be empty.
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    /// The standard `org.freedesktop.DBus.Error.*` names DBusKit produces or maps, and the
    /// bus's own that gattd and gattctl recognise.
    public enum Name {
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
        public static let objectPathInUse = "org.freedesktop.DBus.Error.ObjectPathInUse"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let fileNotFound = "org.freedesktop.DBus.Error.FileNotFound"
        public static let noServer = "org.freedesktop.DBus.Error.NoServer"
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
    }

    public static func unknownMethod(_ message: String) -> DBusError { DBusError(name: Name.unknownMethod, message: message) }
    public static func unknownObject(_ message: String) -> DBusError { DBusError(name: Name.unknownObject, message: message) }
    public static func unknownInterface(_ message: String) -> DBusError {
        DBusError(name: Name.unknownInterface, message: message)
    }
    public static func unknownProperty(_ message: String) -> DBusError {
        DBusError(name: Name.unknownProperty, message: message)
    }
    public static func propertyReadOnly(_ message: String) -> DBusError {
        DBusError(name: Name.propertyReadOnly, message: message)
    }
    public static func invalidArgs(_ message: String) -> DBusError { DBusError(name: Name.invalidArgs, message: message) }
    public static func accessDenied(_ message: String) -> DBusError { DBusError(name: Name.accessDenied, message: message) }
    public static func failed(_ message: String) -> DBusError { DBusError(name: Name.failed, message: message) }
}
