// SPDX-License-Identifier: MIT

/// A timed value update (`update`): every `everyMs` the source yields a value, `encode`
/// turns it into bytes, and the characteristic's value is replaced (and notified).
public struct UpdateDefinition: Sendable, Equatable {
    /// Period in milliseconds, at least 10.
    public var everyMs: Int
    public var source: UpdateSource
    /// How the source's number or text becomes bytes. Defaults to `{"uint8": "$"}` for
    /// number sources and `{"utf8": "$"}` for text; nil only for `bytes` sources.
    public var encode: ValueTemplate?
    /// Keep updating while nobody is subscribed (default false: pause).
    public var whileUnsubscribed: Bool
    /// Notify even when the new value equals the old one (default false).
    public var notifyUnchanged: Bool

    public init(
        everyMs: Int, source: UpdateSource, encode: ValueTemplate?, whileUnsubscribed: Bool = false,
        notifyUnchanged: Bool = false
    ) {
        self.everyMs = everyMs
        self.source = source
        self.encode = encode
        self.whileUnsubscribed = whileUnsubscribed
        self.notifyUnchanged = notifyUnchanged
    }
}

extension UpdateDefinition {
    /// The typed value each update produces when `encode` is one slot and nothing else
    /// (`uint16`, `utf8`, ...); nil otherwise.
    public var valueType: String? {
        guard let segments = encode?.segments, segments.count == 1 else { return nil }
        switch segments[0] {
        case .number(let type): return type.rawValue
        case .text: return "utf8"
        case .bytes: return nil
        }
    }
}
