// SPDX-License-Identifier: MIT

/// Builds `org.freedesktop.DBus.Introspectable` XML.
enum Introspection {
    static let header = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """

    static let introspectable = DBusInterface(
        name: Names.introspectable, methods: [DBusMethod("Introspect", outSignature: "s")])
    static let peer = DBusInterface(
        name: Names.peer, methods: [DBusMethod("Ping"), DBusMethod("GetMachineId", outSignature: "s")])
    static let properties = DBusInterface(
        name: Names.properties,
        methods: [
            DBusMethod("Get", inSignature: "ss", outSignature: "v"),
            DBusMethod("GetAll", inSignature: "s", outSignature: "a{sv}"),
            DBusMethod("Set", inSignature: "ssv"),
        ],
        signals: [DBusSignalDescription("PropertiesChanged", signature: "sa{sv}as")])
    static let objectManager = DBusInterface(
        name: Names.objectManager,
        methods: [DBusMethod("GetManagedObjects", outSignature: "a{oa{sa{sv}}}")],
        signals: [
            DBusSignalDescription("InterfacesAdded", signature: "oa{sa{sv}}"),
            DBusSignalDescription("InterfacesRemoved", signature: "oas"),
        ])

    /// The document for one node: its interfaces, then one `<node name=…/>` per child.
    static func document(interfaces: [DBusInterface], children: [String]) -> String {
        var xml = header + "<node>\n"
        for interface in interfaces { append(interface, to: &xml) }
        for child in children { xml += " <node name=\"\(child)\"/>\n" }
        xml += "</node>\n"
        return xml
    }

    private static func append(_ interface: DBusInterface, to xml: inout String) {
        xml += " <interface name=\"\(interface.name)\">\n"
        for method in interface.methods {
            xml += "  <method name=\"\(method.name)\">\n"
            for type in completeTypes(method.inSignature) { xml += "   <arg type=\"\(escape(type))\" direction=\"in\"/>\n" }
            for type in completeTypes(method.outSignature) { xml += "   <arg type=\"\(escape(type))\" direction=\"out\"/>\n" }
            xml += "  </method>\n"
        }
        for signal in interface.signals {
            xml += "  <signal name=\"\(signal.name)\">\n"
            for type in completeTypes(signal.signature) { xml += "   <arg type=\"\(escape(type))\"/>\n" }
            xml += "  </signal>\n"
        }
        for property in interface.properties {
            let access = property.access == .readwrite ? "readwrite" : "read"
            xml += "  <property name=\"\(property.name)\" type=\"\(escape(property.signature))\" access=\"\(access)\"/>\n"
        }
        xml += " </interface>\n"
    }

    /// Splits a (valid) signature into its single complete types.
    static func completeTypes(_ signature: String) -> [String] {
        var types: [String] = []
        var current = ""
        var depth = 0
        for character in signature {
            current.append(character)
            switch character {
            case "(", "{": depth += 1
            case ")", "}": depth -= 1
            case "a": continue
            default: break
            }
            if depth == 0 && character != "a" {
                types.append(current)
                current = ""
            }
        }
        return types
    }

    private static func escape(_ text: String) -> String {
        text.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;").replacingAll("\"", "&quot;")
    }
}

extension String {
    fileprivate func replacingAll(_ target: Character, _ replacement: String) -> String {
        guard contains(target) else { return self }
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}

extension BusConnection {
    /// Introspect for an exported object, an ObjectManager root or an intermediate node.
    func introspect(_ message: Message, path: ObjectPath, member: String) -> Result<[DBusValue], DBusError> {
        guard member == "Introspect" else {
            return .failure(.unknownMethod("no method \(Names.introspectable).\(member)"))
        }
        var interfaces = [Introspection.introspectable, Introspection.peer]
        if let entry = objects[path.rawValue] {
            interfaces.append(Introspection.properties)
            interfaces += entry.interfaces
        }
        if managedRoots.contains(path) { interfaces.append(Introspection.objectManager) }
        return .success([.string(Introspection.document(interfaces: interfaces, children: children(of: path)))])
    }

    /// Names of the direct child nodes of `path` implied by exported objects and managed roots.
    func children(of path: ObjectPath) -> [String] {
        let depth = path.elements.count
        var names = Set<String>()
        for candidate in objects.values.map(\.path) + Array(managedRoots) where candidate.isDescendant(of: path) {
            names.insert(String(candidate.elements[depth]))
        }
        return names.sorted()
    }
}
