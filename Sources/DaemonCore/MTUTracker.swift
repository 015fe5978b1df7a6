// SPDX-License-Identifier: MIT

/// The ATT MTU gattd assumes for notifications, learnt from the `mtu` option bluetoothd
/// sends with ReadValue/WriteValue (it is not told anything else about links).
///
/// Keeps the last MTU seen for each of the `rememberedDevices` most recently seen
/// devices; `effective` is the smallest of them, because a notification goes to every
/// subscribed central and is cut to `MTU - 3` for each (docs/bluez-contract.md §6). Until a
/// device is seen it is 23, the ATT default.
public final class MTUTracker {
    public static let defaultMTU = 23
    public static let rememberedDevices = 8
    /// Most recent last.
    private var recent: [(device: String, mtu: Int)] = []

    public init() {}

    /// Records the `mtu` option of a request from `device` (nil: unknown device). Values
    /// below 23 are not valid ATT MTUs and are ignored.
    public func record(mtu: Int, device: String?) {
        guard mtu >= Self.defaultMTU else { return }
        let key = device ?? ""
        // The common case on the read/write path: the same central again, same MTU.
        if let last = recent.last, last.device == key, last.mtu == mtu { return }
        recent.removeAll { $0.device == key }
        recent.append((key, mtu))
        if recent.count > Self.rememberedDevices { recent.removeFirst(recent.count - Self.rememberedDevices) }
    }

    /// The last MTU seen from `device`, if it is among the recently seen ones.
    public func mtu(for device: String) -> Int? { recent.last { $0.device == device }?.mtu }

    /// The smallest MTU among recently seen devices, or 23.
    public var effective: Int { recent.lazy.map(\.mtu).min() ?? Self.defaultMTU }

    /// The longest notification payload that arrives whole: `effective - 3`.
    public var notificationPayload: Int { effective - 3 }
}
