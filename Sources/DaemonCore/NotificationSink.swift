// SPDX-License-Identifier: MIT

/// Where the `Notifier` hands a value for the centrals subscribed to a characteristic.
/// The BlueZ layer implements it (a `PropertiesChanged` signal for bluetoothd).
public protocol NotificationSink: AnyObject {
    /// Sends `value` as a notification or indication of `attribute`; false when nothing
    /// could be sent (logged by the sink).
    func send(_ attribute: Attribute, value: [UInt8]) -> Bool
}
