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

extension String {
    /// Whether `part` occurs in the string, compared byte for byte (UTF-8). The standard
    /// `contains(_:)` for a string argument lives in _StringProcessing, which would link
    /// about 1 MB of regular-expression code into gattd for two look-ups in error text.
    func includes(_ part: String) -> Bool {
        let haystack = Array(utf8)
        let needle = Array(part.utf8)
        guard !needle.isEmpty else { return true }
        guard needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }
}
