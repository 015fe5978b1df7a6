// SPDX-License-Identifier: MIT

/// An object exported on a `BusConnection`.
///
/// The connection reads `interfaces` once, at `export`, and serves `Properties`,
/// `Introspectable`, `Peer` and `ObjectManager` from it; the object only answers its own
/// methods. Every call reaching `handle(_:)` has a known interface/member and the declared
/// argument signature. All methods are called on the loop's thread.
public protocol DBusObject: AnyObject {
    /// The object's interfaces, in the order they are reported (read once at export).
    var interfaces: [DBusInterface] { get }
    /// The current value of a declared property, or nil to omit it (from `GetAll` and
    /// `GetManagedObjects`; `Get` answers `UnknownProperty`).
    func property(_ name: String, interface: String) -> DBusValue?
    /// Whether `caller` (a unique bus name; nil for a broadcast such as `InterfacesAdded`)
    /// may read the property: false leaves it out of `GetAll` and `GetManagedObjects` and
    /// answers `Get` with `AccessDenied`. Every property is readable unless the object says not.
    func isPropertyReadable(_ name: String, interface: String, by caller: String?) -> Bool
    /// Stores a new value for a declared `.readwrite` property; `value` already has the
    /// declared signature. Throw to reject it (the error is the reply).
    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError)
    /// Answers a method call now or later through `call.reply` / `call.fail`.
    func handle(_ call: MethodCall)
}

extension DBusObject {
    public func property(_ name: String, interface: String) -> DBusValue? { nil }

    public func isPropertyReadable(_ name: String, interface: String, by caller: String?) -> Bool { true }

    public func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        throw .propertyReadOnly("property \(interface).\(name) is read-only")
    }
}

/// Static description of one interface of an exported object.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDescription]

    public init(name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
                signals: [DBusSignalDescription] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }
}

/// A method: incoming calls must have exactly `inSignature`; replies should have `outSignature`.
public struct DBusMethod: Sendable {
    public var name: String
    public var inSignature: String
    public var outSignature: String

    public init(_ name: String, inSignature: String = "", outSignature: String = "") {
        self.name = name
        self.inSignature = inSignature
        self.outSignature = outSignature
    }
}

/// A property and whether `Properties.Set` may change it.
public struct DBusProperty: Sendable {
    public enum Access: Sendable {
        case read, readwrite
    }

    public var name: String
    public var signature: String
    public var access: Access

    public init(_ name: String, signature: String, access: Access = .read) {
        self.name = name
        self.signature = signature
        self.access = access
    }
}

/// A signal the interface may emit (for introspection).
public struct DBusSignalDescription: Sendable {
    public var name: String
    public var signature: String

    public init(_ name: String, signature: String = "") {
        self.name = name
        self.signature = signature
    }
}
