// SPDX-License-Identifier: MIT

/// bluetoothd's answer when it refused something gattd registered: the D-Bus error's name
/// and message, and what was refused.
public struct Refusal: Equatable, Sendable {
    public enum Subject: String, Sendable {
        /// `LEAdvertisingManager1.RegisterAdvertisement`
        case advertisement
        /// `GattManager1.RegisterApplication`
        case application
    }

    public var subject: Subject
    public var errorName: String
    public var message: String

    public init(subject: Subject, errorName: String, message: String) {
        self.subject = subject
        self.errorName = errorName
        self.message = message
    }
}
