// SPDX-License-Identifier: MIT

public import BLEModel

/// The D-Bus errors a program's handler answers with, and the ATT results they become:
/// the one mapping in that direction. `org.gattd.Att.<Name>` for the standard ATT errors
/// and `org.gattd.Att.Application0x80` ... `Application0x9F` for a profile's own.
public enum HandlerErrors {
    public static let prefix = "org.gattd.Att."
    static let standard: [(name: String, error: GATTError)] = [
        ("ReadNotPermitted", .readNotPermitted),
        ("WriteNotPermitted", .writeNotPermitted),
        ("InvalidOffset", .invalidOffset),
        ("InvalidValueLength", .invalidAttributeValueLength),
        ("InsufficientAuthorization", .insufficientAuthorization),
        ("RequestNotSupported", .requestNotSupported),
        ("Unlikely", .unlikely),
    ]

    /// The ATT error a handler's D-Bus error name stands for; nil when the name is not
    /// one of ours (the caller answers `unlikely` and logs the name).
    public static func gattError(named name: String) -> GATTError? {
        guard name.hasPrefix(prefix) else { return nil }
        let tail = name.dropFirst(prefix.count)
        if let entry = standard.first(where: { $0.name == tail }) { return entry.error }
        guard tail.hasPrefix("Application0x") || tail.hasPrefix("Application0X"),
            let code = UInt8(tail.dropFirst("Application0x".count), radix: 16), (0x80...0x9F).contains(code)
        else { return nil }
        return .application(code)
    }

    /// The name a handler uses for `error` (documentation and tests).
    public static func name(of error: GATTError) -> String {
        if case .application(let code) = error { return prefix + "Application0x" + String(code, radix: 16) }
        return prefix + (standard.first { $0.error == error }?.name ?? "Unlikely")
    }
}
