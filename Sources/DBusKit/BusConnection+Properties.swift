// SPDX-License-Identifier: MIT
internal import CDBus

extension BusConnection {
    /// `org.freedesktop.DBus.Properties` for an exported object.
    func propertiesCall(_ message: Message, entry: ExportedObject, member: String) -> Result<[DBusValue], DBusError> {
        let expected: String
        switch member {
        case "Get": expected = "ss"
        case "GetAll": expected = "s"
        case "Set": expected = "ssv"
        default: return .failure(.unknownMethod("no method \(Names.properties).\(member)"))
        }
        guard dbus_message_has_signature(message.raw, expected) != 0 else {
            return .failure(.invalidArgs("\(member) expects signature '\(expected)', got '\(message.signature)'"))
        }
        let arguments: [DBusValue]
        do {
            arguments = try message.arguments()
        } catch {
            return .failure(error)
        }
        let interfaceName = arguments[0].asString ?? ""
        if member == "GetAll", interfaceName == Names.properties || interfaceName == Names.introspectable {
            return .success([.dictionary(keySignature: "s", valueSignature: "v", [])])
        }
        guard let interface = entry.interfaces.first(where: { $0.name == interfaceName }) else {
            return .failure(.unknownInterface("no interface '\(interfaceName)' at \(entry.path)"))
        }
        if member == "GetAll" {
            return .success([entry.propertyValues(of: interface, for: message.sender)])
        }
        let name = arguments[1].asString ?? ""
        guard let property = entry.properties[interfaceName]?[name] else {
            return .failure(.unknownProperty("no property \(interfaceName).\(name) at \(entry.path)"))
        }
        if member == "Get" {
            guard entry.object.isPropertyReadable(name, interface: interfaceName, by: message.sender) else {
                return .failure(.accessDenied("property \(interfaceName).\(name) at \(entry.path) is not readable by this caller"))
            }
            guard let value = entry.object.property(name, interface: interfaceName) else {
                return .failure(.unknownProperty("property \(interfaceName).\(name) has no value"))
            }
            return .success([.variant(value)])
        }
        guard property.access == .readwrite else {
            return .failure(.propertyReadOnly("property \(interfaceName).\(name) is read-only"))
        }
        guard entry.object.isPropertyWritable(name, interface: interfaceName, by: message.sender) else {
            return .failure(.accessDenied("property \(interfaceName).\(name) at \(entry.path) is not writable by this caller"))
        }
        guard case .variant(let value) = arguments[2], value.signature == property.signature else {
            return .failure(.invalidArgs(
                "property \(interfaceName).\(name) has type '\(property.signature)', got '\(arguments[2].unwrappedVariant.signature)'"))
        }
        do {
            try entry.object.setProperty(name, interface: interfaceName, value: value)
            return .success([])
        } catch {
            return .failure(error)
        }
    }
}
