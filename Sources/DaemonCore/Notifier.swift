// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging

/// The notification path, in one place: a change of a subscribed characteristic's value
/// -> the pacer (spacing per characteristic) -> the sink (the BlueZ layer's signal).
///
/// Observes its database from `init`; a reload that rebuilds the tree makes a new one for
/// the new database. Lives on the loop thread.
public final class Notifier {
    public let pacer: NotificationPacer
    /// Receives what goes out; nil drops notifications (nothing is exported yet).
    public weak var sink: (any NotificationSink)?
    private let logger: Logger

    public init(
        configuration: Configuration, database: AttributeDatabase, clock: PacerClock, mtu: MTUTracker, logger: Logger
    ) {
        self.logger = logger
        var deliver: ((Attribute) -> Bool)?
        pacer = NotificationPacer(
            configuration: configuration, clock: clock, mtu: mtu, logger: logger, send: { deliver?($0) ?? false })
        deliver = { [unowned self] attribute in self.deliver(attribute) }
        database.observeChanges { [weak self] attribute, _ in
            guard let self, attribute.isNotifying else { return }
            self.pacer.submit(attribute)
        }
    }

    /// The pacer's slot came: the value goes to the sink.
    private func deliver(_ attribute: Attribute) -> Bool {
        guard let sink else { return false }
        return sink.send(attribute, value: attribute.value)
    }

    /// Whether `SetValue` would find no room in `attribute`'s queue; nil: not queued.
    public func queueCapacity(_ attribute: Attribute) -> Int? { nil }

    /// Whether the queue of `attribute` has room for one more value.
    public func hasRoom(_ attribute: Attribute) -> Bool { true }

    /// A central confirmed an indication of `attribute`.
    public func confirmed(_ attribute: Attribute) {}
}
