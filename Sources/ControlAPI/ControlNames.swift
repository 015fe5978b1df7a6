// SPDX-License-Identifier: MIT

public import DBusKit

/// Every D-Bus spelling of the control API, in one place (docs/control-api.md).
public enum ControlNames {
    /// The well-known name gattd asks for; systemd/org.gattd.conf lets only user gattd own it.
    public static let busName = "org.gattd"
    /// The manager object.
    public static let managerPath: ObjectPath = "/org/gattd"
    /// The manager interface: methods and signals.
    public static let managerInterface = "org.gattd.Manager1"
    /// Prefix of every error the control API returns.
    public static let errorPrefix = "org.gattd.Error."
}
