// SPDX-License-Identifier: MIT

/// An object exported on a `BusConnection`.
///
/// The connection reads `interfaces` once, at `export`, and serves `Properties`,
/// `Introspectable`, `Peer` and `ObjectManager` from it; the object only answers its own
/// methods. Every call reaching a method's handler has a known interface/member and the
/// declared argument signature: a method declared with a handler (`DBusMethod(_:inSignature:outSignature:handler:)`,
/// one row = name, signature, handler, as in an sd-bus vtable) goes to that handler; one
/// declared without goes to `handle(_:)`. All methods are called on the loop's thread.
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
    /// Whether `caller` may set the declared `.readwrite` property: false answers `Set`
    /// with `AccessDenied`. Every such property is writable by anyone unless the object says not.
    func isPropertyWritable(_ name: String, interface: String, by caller: String?) -> Bool
    /// Stores a new value for a declared `.readwrite` property; `value` already has the
    /// declared signature. Throw to reject it (the error is the reply).
    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError)
    /// Answers a call of a method declared without a handler, now or later through
    /// `call.reply` / `call.fail`.
    func handle(_ call: MethodCall)
}

extension DBusObject {
    public func property(_ name: String, interface: String) -> DBusValue? { nil }

    public func isPropertyReadable(_ name: String, interface: String, by caller: String?) -> Bool { true }

    public func isPropertyWritable(_ name: String, interface: String, by caller: String?) -> Bool { true }

    public func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        throw .propertyReadOnly("property \(interface).\(name) is read-only")
    }

    /// An object whose every method carries its handler needs none: refuse, naming the method.
    public func handle(_ call: MethodCall) {
        call.fail(.unknownMethod("no handler for \(call.member ?? "(none)")"))
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
///
/// A row made with a handler is the whole method (name, signatures, what it does), so
/// nothing else spells its name; a row without one is answered by `DBusObject.handle(_:)`.
public struct DBusMethod: Sendable {
    public var name: String
    public var inSignature: String
    public var outSignature: String
    /// What runs a call, when the row carries it.
    let handler: MethodHandler?

    /// A method answered by the object's `handle(_:)`.
    public init(_ name: String, inSignature: String = "", outSignature: String = "") {
        self.name = name
        self.inSignature = inSignature
        self.outSignature = outSignature
        handler = nil
    }

    /// A method answered by `handler`, called with the exported object (which must be an
    /// `Object`: `export` refuses the description otherwise) and the call, whose arguments
    /// already have `inSignature`.
    public init<Object: DBusObject & SendableMetatype>(
        _ name: String, inSignature: String = "", outSignature: String = "",
        handler: @escaping @Sendable (Object, MethodCall) -> Void
    ) {
        self.name = name
        self.inSignature = inSignature
        self.outSignature = outSignature
        self.handler = MethodHandler(handler)
    }
}

/// A row's handler with its object type erased; `accepts` is asked once, at export, so a
/// call costs no cast check.
struct MethodHandler: Sendable {
    /// The name of the object type, for the error (a closure: naming a type costs the
    /// runtime's demangler, which nothing else runs).
    let objectType: @Sendable () -> String
    let accepts: @Sendable (any DBusObject) -> Bool
    let run: @Sendable (any DBusObject, MethodCall) -> Void

    init<Object: DBusObject & SendableMetatype>(_ handler: @escaping @Sendable (Object, MethodCall) -> Void) {
        objectType = { "\(Object.self)" }
        accepts = { $0 is Object }
        run = { object, call in handler(unsafeDowncast(object, to: Object.self), call) }
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
