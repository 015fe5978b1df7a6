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
    /// The interface a channel taker's object implements (`RegisterChannel`), and its one
    /// method, `Open(h channel, a{sv} info)`.
    public static let channelTakerInterface = "org.gattd.ChannelTaker1"
    public static let channelTakerOpen = "Open"

    /// The bus name of gattd instance `instance` (`gattd --instance hci1`, the unit
    /// `gattd@hci1.service`): `org.gattd.hci1`; `busName` for none.
    public static func busName(instance: String?) -> String {
        guard let instance, !instance.isEmpty else { return busName }
        return busName + "." + instance
    }

    /// Whether `name` can name an instance: one element of a D-Bus bus name, ASCII letters,
    /// digits and `_`, not starting with a digit, at most 64 bytes (systemd's `%i` of
    /// `gattd@hci1` is `hci1`).
    public static func isValidInstance(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 64, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
        else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
