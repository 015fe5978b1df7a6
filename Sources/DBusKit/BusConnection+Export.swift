// SPDX-License-Identifier: MIT
internal import CDBus
import Glibc

extension BusConnection {
    /// Exports `object` at `path`. Its `interfaces` are read now and must not change.
    ///
    /// Below a path given to `addObjectManager(at:)`, emits `InterfacesAdded` from the
    /// nearest such root.
    /// - Throws: `ObjectPathInUse` if something is exported there; `InvalidArgs` for an
    ///   invalid interface/member name or signature in the description.
    public func export(_ object: any DBusObject, at path: ObjectPath) throws(DBusError) {
        guard objects[path.rawValue] == nil else {
            throw DBusError(name: DBusError.Name.objectPathInUse, message: "\(path) is already exported")
        }
        exportSequence += 1
        let entry = try ExportedObject(object: object, path: path, sequence: exportSequence)
        objects[path.rawValue] = entry
        if let root = managingRoot(of: path) {
            try? emitSignal(path: root, interface: Names.objectManager, member: Freedesktop.interfacesAdded,
                            arguments: [.objectPath(path), entry.interfacesAndProperties(for: nil)])
        }
    }

    /// Puts `object` in place of the one exported at `path`, silently: no `InterfacesRemoved`
    /// or `InterfacesAdded`, and the place in `GetManagedObjects`' order is kept. For a new
    /// backing of an object whose interfaces and properties a peer already read and must
    /// not see change (gattd's unchanged services across a reload).
    /// - Throws: `UnknownObject` if nothing is exported at `path`; as `export` otherwise.
    public func replace(_ object: any DBusObject, at path: ObjectPath) throws(DBusError) {
        guard let old = objects[path.rawValue] else {
            throw DBusError(name: DBusError.Name.unknownObject, message: "\(path) is not exported")
        }
        let entry = try ExportedObject(object: object, path: path, sequence: old.sequence)
        objects[path.rawValue] = entry
        if lastDispatched === old { lastDispatched = nil }
    }

    /// Removes the object at `path` (no-op if none), emitting `InterfacesRemoved` below a
    /// managed root.
    public func unexport(_ path: ObjectPath) {
        guard let entry = objects.removeValue(forKey: path.rawValue) else { return }
        if lastDispatched === entry { lastDispatched = nil }
        if let root = managingRoot(of: path) {
            try? emitSignal(path: root, interface: Names.objectManager, member: Freedesktop.interfacesRemoved,
                            arguments: [.objectPath(path), .stringArray(entry.allInterfaceNames)])
        }
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path` (which need not be an exported
    /// object): `GetManagedObjects` lists every object strictly below it in export order.
    public func addObjectManager(at path: ObjectPath) {
        managedRoots.insert(path)
    }

    /// Stops serving `ObjectManager` at `path`.
    public func removeObjectManager(at path: ObjectPath) {
        managedRoots.remove(path)
    }

    /// The object exported at `path`, if any.
    public func exportedObject(at path: ObjectPath) -> (any DBusObject)? { objects[path.rawValue]?.object }

    func managingRoot(of path: ObjectPath) -> ObjectPath? {
        var best: ObjectPath?
        for root in managedRoots where path.isDescendant(of: root) {
            if best == nil || root.rawValue.count > best!.rawValue.count { best = root }
        }
        return best
    }

    // MARK: Dispatch of incoming calls

    func handleMethodCall(_ raw: OpaquePointer) -> DBusHandlerResult {
        guard let pathPointer = dbus_message_get_path(raw), let memberPointer = dbus_message_get_member(raw) else {
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        let interfacePointer = dbus_message_get_interface(raw)
        if let interfacePointer, strcmp(interfacePointer, Names.peerCString) == 0 {
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED  // libdbus answers Peer.Ping/GetMachineId
        }
        let message = Message(retaining: raw)
        if let entry = exportedObject(atCPath: pathPointer) {
            dispatch(message, to: entry, interface: interfacePointer, member: memberPointer)
        } else {
            dispatchToNode(
                message, path: ObjectPath(unchecked: String(cString: pathPointer)),
                interface: interfacePointer.map { String(cString: $0) }, member: String(cString: memberPointer))
        }
        return DBUS_HANDLER_RESULT_HANDLED
    }

    /// The object at `path`; a repeat of the previous call's path costs one `strcmp`.
    private func exportedObject(atCPath path: UnsafePointer<CChar>) -> ExportedObject? {
        if let last = lastDispatched, strcmp(last.cPath, path) == 0 { return last }
        guard let entry = objects[String(cString: path)] else { return nil }
        lastDispatched = entry
        return entry
    }

    private func answer(_ message: Message, _ result: Result<[DBusValue], DBusError>) {
        guard !message.noReplyExpected else { return }
        switch result {
        case .success(let values):
            let reply = Message.methodReturn(replyingTo: message)
            do {
                try DBusValue.append(values, to: reply.raw)
                sendReply(reply)
            } catch {
                sendReply(Message.errorReply(replyingTo: message, error))
            }
        case .failure(let error):
            sendReply(Message.errorReply(replyingTo: message, error))
        }
    }

    /// Routes a call to `entry`: the standard interfaces here, anything else to the object
    /// once its member and argument signature match a declared method. The common case
    /// compares libdbus's C strings and makes no Swift string.
    private func dispatch(
        _ message: Message, to entry: ExportedObject, interface: UnsafePointer<CChar>?, member: UnsafePointer<CChar>
    ) {
        if let interface, strncmp(interface, Names.standardPrefix, Names.standardPrefixLength) == 0 {
            let name = String(cString: interface)
            let memberName = String(cString: member)
            switch name {
            case Names.properties:
                answer(message, propertiesCall(message, entry: entry, member: memberName))
                return
            case Names.introspectable:
                answer(message, introspect(message, path: entry.path, member: memberName))
                return
            case Names.objectManager:
                answer(message, objectManagerCall(message, path: entry.path, member: memberName))
                return
            default:
                break
            }
        }
        guard let method = entry.method(interface: interface, member: member) else {
            let memberName = String(cString: member)
            guard let interface else {
                answer(message, .failure(.unknownMethod("no method \(memberName) at \(entry.path)")))
                return
            }
            let name = String(cString: interface)
            if entry.methods[name] == nil {
                answer(message, .failure(.unknownInterface("no interface \(name) at \(entry.path)")))
            } else {
                answer(message, .failure(.unknownMethod("no method \(name).\(memberName) at \(entry.path)")))
            }
            return
        }
        guard dbus_message_has_signature(message.raw, method.signature) != 0 else {
            answer(message, .failure(.invalidArgs(
                "\(method.method.name) expects signature '\(method.method.inSignature)', got '\(message.signature)'")))
            return
        }
        let call = MethodCall(message: message, connection: self, methodName: method.method.name)
        if let handler = method.handler {
            handler.run(entry.object, call)
        } else {
            entry.object.handle(call)
        }
    }

    /// A path with no exported object: an ObjectManager root and/or an intermediate node.
    private func dispatchToNode(_ message: Message, path: ObjectPath, interface: String?, member: String) {
        let isManager = managedRoots.contains(path)
        let hasChildren = isManager || objects.values.contains { $0.path.isDescendant(of: path) }
        if interface == Names.objectManager || (interface == nil && member == Freedesktop.getManagedObjects), isManager {
            answer(message, objectManagerCall(message, path: path, member: member))
        } else if interface == Names.introspectable || (interface == nil && member == "Introspect"), hasChildren {
            answer(message, introspect(message, path: path, member: member))
        } else if hasChildren {
            answer(message, .failure(.unknownInterface("no interface \(interface ?? "(none)") at \(path)")))
        } else {
            answer(message, .failure(.unknownObject("no object at \(path)")))
        }
    }

    // MARK: org.freedesktop.DBus.ObjectManager

    private func objectManagerCall(_ message: Message, path: ObjectPath, member: String) -> Result<[DBusValue], DBusError> {
        guard managedRoots.contains(path) else {
            return .failure(.unknownInterface("no object manager at \(path)"))
        }
        guard member == Freedesktop.getManagedObjects else {
            return .failure(.unknownMethod("no method \(Names.objectManager).\(member)"))
        }
        guard message.signature.isEmpty else {
            return .failure(.invalidArgs("GetManagedObjects expects signature '', got '\(message.signature)'"))
        }
        let below = objects.values.filter { $0.path.isDescendant(of: path) }.sorted { $0.sequence < $1.sequence }
        let entries = below.map { DBusDictionaryEntry(key: .objectPath($0.path), value: $0.interfacesAndProperties(for: message.sender)) }
        return .success([.dictionary(keySignature: "o", valueSignature: "a{sa{sv}}", entries)])
    }
}
