// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc

extension BusConnection {
    /// Emits a signal from `path`.
    /// - Throws: `InvalidArgs` for an invalid name or argument (nothing is sent).
    public func emitSignal(path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [])
        throws(DBusError)
    {
        try send(Message.signal(path: path, interface: interface, member: member, arguments: arguments))
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` from `path`.
    ///
    /// The body is written straight into the message (no intermediate `DBusValue` tree), so
    /// a notification carrying one `ay` costs one block copy of the bytes.
    /// - Throws: `InvalidArgs` for an invalid name or value (nothing is sent).
    public func emitPropertiesChanged(
        path: ObjectPath, interface: String, changed: [(String, DBusValue)], invalidated: [String] = []
    ) throws(DBusError) {
        try Names.validateInterface(interface)
        for (name, value) in changed {
            try DBusValue.validateString(name)
            try DBusValue.variant(value).validate()
        }
        for name in invalidated { try DBusValue.validateString(name) }
        guard let raw = dbus_message_new_signal(path.rawValue, Names.properties, Freedesktop.propertiesChanged) else {
            throw DBusError(name: DBusError.Name.noMemory, message: "dbus_message_new_signal")
        }
        let message = Message(taking: raw)
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iter)
        DBusValue.string(interface).append(to: &iter)
        DBusValue.withContainer(&iter, TypeCode.array, "{sv}") { array in
            for (name, value) in changed {
                DBusValue.withContainer(array, TypeCode.dictEntry, nil) { entry in
                    DBusValue.string(name).append(to: entry)
                    DBusValue.variant(value).append(to: entry)
                }
            }
        }
        DBusValue.withContainer(&iter, TypeCode.array, "s") { array in
            for name in invalidated { DBusValue.string(name).append(to: array) }
        }
        try send(message)
    }

    /// Delivers signals matching every non-nil field to `handler`, and asks the bus to route
    /// them here (`AddMatch` is sent without waiting for its reply).
    ///
    /// - Important: a well-known `sender` (not starting with `:`) is only enforced by the
    ///   bus's match rule; locally it matches any sender, because resolving the owner
    ///   would need a name-owner lookup. Combine it with a `path` or `arg0` that the
    ///   expected sender alone uses.
    public func subscribe(
        sender: String? = nil, path: ObjectPath? = nil, interface: String? = nil, member: String? = nil,
        arg0: String? = nil, _ handler: @escaping (Message) -> Void
    ) -> SignalSubscription {
        let subscription = SignalSubscription(
            sender: sender, path: path, interface: interface, member: member, arg0: arg0,
            connection: self, handler: handler)
        if (try? DBusValue.validateString(subscription.rule)) != nil {
            dbus_bus_add_match(raw, subscription.rule, nil)
        }
        subscriptions.append(subscription)
        return subscription
    }

    /// Runs `handler` when `name` (a caller's unique name) leaves the bus: the bus's
    /// `NameOwnerChanged` for it with no new owner. Cancel the subscription to stop watching.
    public func whenNameLeaves(_ name: String, _ handler: @escaping () -> Void) -> SignalSubscription {
        subscribe(
            sender: Freedesktop.bus, interface: Freedesktop.busInterface, member: Freedesktop.nameOwnerChanged,
            arg0: name
        ) { message in
            guard let arguments = try? message.arguments(), arguments.count == 3, arguments[2].asString == ""
            else { return }
            handler()
        }
    }

    func removeSubscription(_ subscription: SignalSubscription) {
        subscriptions.removeAll { $0 === subscription }
        if isConnected, (try? DBusValue.validateString(subscription.rule)) != nil {
            dbus_bus_remove_match(raw, subscription.rule, nil)
        }
    }

    func routeSignal(_ raw: OpaquePointer) {
        let message = Message(retaining: raw)
        var firstArgument: String?
        var didReadFirstArgument = false
        for subscription in subscriptions where subscription.isActive {
            if let sender = subscription.sender, sender.hasPrefix(":") || sender == Freedesktop.bus {
                guard let actual = dbus_message_get_sender(raw), strcmp(actual, sender) == 0 else { continue }
            }
            if let path = subscription.path {
                guard dbus_message_has_path(raw, path.rawValue) != 0 else { continue }
            }
            if let interface = subscription.interface {
                guard dbus_message_has_interface(raw, interface) != 0 else { continue }
            }
            if let member = subscription.member {
                guard dbus_message_has_member(raw, member) != 0 else { continue }
            }
            if let arg0 = subscription.arg0 {
                if !didReadFirstArgument {
                    didReadFirstArgument = true
                    firstArgument = Self.firstStringArgument(raw)
                }
                guard firstArgument == arg0 else { continue }
            }
            subscription.handler(message)
        }
    }

    private static func firstStringArgument(_ raw: OpaquePointer) -> String? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == TypeCode.string else {
            return nil
        }
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) }
    }
}
