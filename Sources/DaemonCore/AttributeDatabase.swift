// SPDX-License-Identifier: MIT

public import BLEModel

/// The values of every characteristic and descriptor, and the rules for reading and
/// writing them: the ATT semantics bluetoothd leaves to the application.
///
/// - Reads return `value[offset...]`; `offset == count` gives an empty value and
///   `offset > count` is `invalidOffset` (bluetoothd does not slice; it sends
///   `min(mtu - 1, count)` bytes of what it gets, docs/bluez-contract.md §5).
/// - Writes at an offset (long and prepared writes arrive that way) produce
///   `value[..<offset] + data`; the result must fit `minLength...maxLength`.
/// - Nothing here knows D-Bus: the BlueZ module translates `GATTError`.
public final class AttributeDatabase {
    /// Attributes in definition order: each characteristic followed by its descriptors.
    public private(set) var attributes: [Attribute] = []
    private var byID: [String: Attribute] = [:]
    private var observers: [(Attribute, ValueChangeOrigin) -> Void] = []
    private var writeObservers: [(Attribute, ValueChangeOrigin) -> Void] = []
    private var subscriptionObservers: [(Attribute) -> Void] = []

    public init(configuration: Configuration) {
        for service in configuration.services {
            for characteristic in service.characteristics {
                let attribute = Attribute(
                    id: characteristic.id, uuid: characteristic.uuid,
                    kind: .characteristic(serviceID: service.id),
                    access: AttributeAccess(characteristic.flags),
                    minLength: characteristic.minLength, maxLength: characteristic.maxLength,
                    value: characteristic.value, accept: characteristic.accept)
                if let handling = characteristic.handler { attribute.handling = handling }
                add(attribute)
                for descriptor in characteristic.descriptors {
                    add(
                        Attribute(
                            id: descriptor.id, uuid: descriptor.uuid,
                            kind: .descriptor(characteristicID: characteristic.id),
                            access: AttributeAccess(descriptor.flags),
                            minLength: descriptor.minLength, maxLength: descriptor.maxLength,
                            value: descriptor.value))
                }
            }
        }
    }

    private func add(_ attribute: Attribute) {
        precondition(byID[attribute.id] == nil, "validation lets no duplicate id through: \(attribute.id)")
        attributes.append(attribute)
        byID[attribute.id] = attribute
    }

    public subscript(id: String) -> Attribute? { byID[id] }

    /// Calls `observer` after every change of a value, whatever caused it.
    public func observeChanges(_ observer: @escaping (Attribute, ValueChangeOrigin) -> Void) {
        observers.append(observer)
    }

    /// Calls `observer` after every accepted write from a central, whether or not it
    /// changed the value (after the change observers, with the value as stored).
    public func observeWrites(_ observer: @escaping (Attribute, ValueChangeOrigin) -> Void) {
        writeObservers.append(observer)
    }

    /// Calls `observer` after `isNotifying` of a characteristic changed (first subscriber
    /// arrived, last one left); not for repeated StartNotify/StopNotify.
    public func observeSubscriptions(_ observer: @escaping (Attribute) -> Void) {
        subscriptionObservers.append(observer)
    }

    // MARK: - Central operations

    /// The bytes a central gets for a read at `offset`.
    public func read(_ attribute: Attribute, offset: Int) -> Result<ArraySlice<UInt8>, GATTError> {
        guard attribute.access.contains(.read) else { return .failure(.readNotPermitted) }
        let value = attribute.value
        guard offset >= 0, offset <= value.count else { return .failure(.invalidOffset) }
        return .success(value[offset...])
    }

    /// Checks a write without storing it: the permission, the offset and the length the
    /// value would have afterwards.
    public func validateWrite(_ attribute: Attribute, count: Int, offset: Int) -> Result<Void, GATTError> {
        guard attribute.access.isWritable else { return .failure(.writeNotPermitted) }
        guard offset >= 0, offset <= attribute.value.count else { return .failure(.invalidOffset) }
        let newCount = offset + count
        guard newCount <= attribute.maxLength, newCount >= attribute.minLength else {
            return .failure(.invalidAttributeValueLength)
        }
        return .success(())
    }

    /// Applies a write from a central: validates, stores, notifies observers.
    @discardableResult
    public func write(
        _ attribute: Attribute, bytes: [UInt8], offset: Int, origin: ValueChangeOrigin = .central(device: nil)
    ) -> Result<Void, GATTError> {
        if case .failure(let error) = validateWrite(attribute, count: bytes.count, offset: offset) {
            return .failure(error)
        }
        let newValue = offset == 0 ? bytes : Array(attribute.value[..<offset]) + bytes
        store(newValue, in: attribute, origin: origin)
        for observer in writeObservers { observer(attribute, origin) }
        return .success(())
    }

    /// Sets a value from inside the daemon (a timer, the control API, a restored state),
    /// checked against the same length bounds as a central's write. `evenIfUnchanged`:
    /// observers hear of it even when the value stays the same (a sample of a stream).
    @discardableResult
    public func set(
        _ attribute: Attribute, to bytes: [UInt8], origin: ValueChangeOrigin, evenIfUnchanged: Bool = false
    ) -> Result<Void, GATTError> {
        guard bytes.count <= attribute.maxLength, bytes.count >= attribute.minLength else {
            return .failure(.invalidAttributeValueLength)
        }
        store(bytes, in: attribute, origin: origin, evenIfUnchanged: evenIfUnchanged)
        return .success(())
    }

    private func store(_ bytes: [UInt8], in attribute: Attribute, origin: ValueChangeOrigin, evenIfUnchanged: Bool = false) {
        let changed = bytes != attribute.value
        attribute.value = bytes
        if origin.countsAsWrite { attribute.hasBeenWritten = true }
        guard changed || evenIfUnchanged || origin.forcesNotification else { return }
        for observer in observers { observer(attribute, origin) }
    }

    // MARK: - Subscriptions

    /// Records bluetoothd's StartNotify/StopNotify. Returns false when the attribute
    /// cannot notify (no `notify`/`indicate` flag), which bluetoothd never asks for.
    @discardableResult
    public func setNotifying(_ attribute: Attribute, _ notifying: Bool) -> Bool {
        guard attribute.isCharacteristic, attribute.access.canNotify else { return false }
        guard attribute.isNotifying != notifying else { return true }
        attribute.isNotifying = notifying
        for observer in subscriptionObservers { observer(attribute) }
        return true
    }

    /// bluetoothd or the adapter went away, and with it every subscription: each
    /// notifying characteristic stops notifying (observers hear of each).
    /// - Returns: the ids that were notifying.
    @discardableResult
    public func clearSubscriptions() -> [String] {
        let notifying = attributes.filter(\.isNotifying)
        for attribute in notifying { setNotifying(attribute, false) }
        return notifying.map(\.id)
    }

    /// Records an indication confirmation.
    public func confirm(_ attribute: Attribute) {
        attribute.confirmations += 1
    }

    /// Characteristics that currently have at least one subscriber.
    public var subscribedCount: Int { attributes.lazy.filter(\.isNotifying).count }
}
