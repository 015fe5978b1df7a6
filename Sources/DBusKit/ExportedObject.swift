// SPDX-License-Identifier: MIT
import Glibc

/// An exported object with its interface description indexed for dispatch.
final class ExportedObject {
    let object: any DBusObject
    let path: ObjectPath
    /// Export order; `GetManagedObjects` lists objects by it.
    let sequence: UInt64
    let interfaces: [DBusInterface]
    let methods: [String: [String: DBusMethod]]
    let properties: [String: [String: DBusProperty]]
    /// Every method in declaration order (interfaces in order, then their methods), for
    /// dispatch by C string: the first match wins, as for a call naming no interface.
    let dispatchTable: [DispatchEntry]
    /// The path as a C string (owned), to recognise a repeated call without a `String`.
    let cPath: UnsafeMutablePointer<CChar>

    init(object: any DBusObject, path: ObjectPath, sequence: UInt64) throws(DBusError) {
        self.object = object
        self.path = path
        self.sequence = sequence
        interfaces = object.interfaces
        var methods: [String: [String: DBusMethod]] = [:]
        var properties: [String: [String: DBusProperty]] = [:]
        var dispatchTable: [DispatchEntry] = []
        for interface in interfaces {
            try Names.validateInterface(interface.name)
            var byName: [String: DBusMethod] = [:]
            for method in interface.methods {
                try Names.validateMember(method.name)
                guard DBusValue.isValidSignature(method.inSignature, single: false),
                    DBusValue.isValidSignature(method.outSignature, single: false)
                else { throw .invalidArgs("invalid signature in \(interface.name).\(method.name)") }
                if let handler = method.handler, !handler.accepts(object) {
                    throw .invalidArgs(
                        "\(interface.name).\(method.name)'s handler takes \(handler.objectType()), not \(type(of: object))")
                }
                byName[method.name] = method
            }
            var added: Set<String> = []
            for method in interface.methods where added.insert(method.name).inserted {
                dispatchTable.append(DispatchEntry(interface: interface.name, method: byName[method.name]!))
            }
            methods[interface.name] = byName
            var propertiesByName: [String: DBusProperty] = [:]
            for property in interface.properties {
                guard DBusValue.isValidSignature(property.signature, single: true) else {
                    throw .invalidArgs("invalid signature for property \(interface.name).\(property.name)")
                }
                propertiesByName[property.name] = property
            }
            properties[interface.name] = propertiesByName
        }
        self.methods = methods
        self.properties = properties
        self.dispatchTable = dispatchTable
        cPath = strdup(path.rawValue)
    }

    deinit { free(cPath) }

    /// The method a call naming `member` (and `interface`, if given) invokes.
    func method(interface: UnsafePointer<CChar>?, member: UnsafePointer<CChar>) -> DispatchEntry? {
        for entry in dispatchTable where entry.matches(interface: interface, member: member) { return entry }
        return nil
    }

    /// `a{sv}` of every non-nil property of `interface` that `caller` (a unique name; nil for
    /// a broadcast) may read, in declaration order.
    func propertyValues(of interface: DBusInterface, for caller: String?) -> DBusValue {
        var entries: [DBusDictionaryEntry] = []
        entries.reserveCapacity(interface.properties.count)
        for property in interface.properties
        where object.isPropertyReadable(property.name, interface: interface.name, by: caller) {
            if let value = object.property(property.name, interface: interface.name) {
                entries.append(DBusDictionaryEntry(key: .string(property.name), value: .variant(value)))
            }
        }
        return .dictionary(keySignature: "s", valueSignature: "v", entries)
    }

    /// `a{sa{sv}}` as in `GetManagedObjects` and `InterfacesAdded`: the standard interfaces
    /// with empty dictionaries, then every interface with the properties `caller` may read.
    func interfacesAndProperties(for caller: String?) -> DBusValue {
        let empty = DBusValue.dictionary(keySignature: "s", valueSignature: "v", [])
        var entries = [
            DBusDictionaryEntry(key: .string(Names.introspectable), value: empty),
            DBusDictionaryEntry(key: .string(Names.properties), value: empty),
        ]
        for interface in interfaces {
            entries.append(DBusDictionaryEntry(key: .string(interface.name), value: propertyValues(of: interface, for: caller)))
        }
        return .dictionary(keySignature: "s", valueSignature: "a{sv}", entries)
    }

    /// Every interface name reported for the object (for `InterfacesRemoved`).
    var allInterfaceNames: [String] { [Names.introspectable, Names.properties] + interfaces.map(\.name) }
}
