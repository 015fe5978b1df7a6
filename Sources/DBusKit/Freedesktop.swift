// SPDX-License-Identifier: MIT

/// Every `org.freedesktop.DBus` spelling gattd uses (the bus itself, its standard
/// interfaces and their members), in one place; the error names are `DBusError.Name`.
public enum Freedesktop {
    /// The bus daemon's name, path and interface.
    public static let bus = "org.freedesktop.DBus"
    public static let busPath: ObjectPath = "/org/freedesktop/DBus"
    public static let busInterface = "org.freedesktop.DBus"

    public static let properties = "org.freedesktop.DBus.Properties"
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let peer = "org.freedesktop.DBus.Peer"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    public static let local = "org.freedesktop.DBus.Local"

    /// Members of the bus interface.
    public static let nameOwnerChanged = "NameOwnerChanged"
    public static let getNameOwner = "GetNameOwner"
    public static let requestName = "RequestName"
    /// Members of `Properties`.
    public static let getAll = "GetAll"
    public static let propertiesChanged = "PropertiesChanged"
    /// Members of `ObjectManager`.
    public static let getManagedObjects = "GetManagedObjects"
    public static let interfacesAdded = "InterfacesAdded"
    public static let interfacesRemoved = "InterfacesRemoved"
}
