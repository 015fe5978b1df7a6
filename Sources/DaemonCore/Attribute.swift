// SPDX-License-Identifier: MIT

public import BLEModel

/// One characteristic or descriptor value that centrals read and write.
///
/// Lives on the event loop's thread, like the database that owns it.
public final class Attribute {
    public enum Kind: Sendable, Equatable {
        case characteristic(serviceID: String)
        case descriptor(characteristicID: String)
    }

    public let id: String
    public let uuid: BluetoothUUID
    public let kind: Kind
    public let access: AttributeAccess
    public let minLength: Int
    public let maxLength: Int
    /// The value as defined in the configuration, before any write; a reload may change it.
    public internal(set) var initialValue: [UInt8]
    /// The current value.
    public internal(set) var value: [UInt8]
    /// Whether a central or a program has written the value since it was defined.
    public internal(set) var hasBeenWritten = false
    /// bluetoothd's StartNotify/StopNotify: true from the first subscriber to the last.
    public internal(set) var isNotifying = false
    /// Indications confirmed by centrals (bluetoothd's `Confirm`).
    public internal(set) var confirmations = 0
    /// The program serving this attribute's reads (`HandlerRegistry`), if any.
    public internal(set) var readHandler: (any AttributeHandler)?
    /// The program deciding this attribute's writes (`HandlerRegistry`), if any.
    public internal(set) var writeHandler: (any AttributeHandler)?
    /// The program serving reads, else writes (for listings).
    public var handler: (any AttributeHandler)? { readHandler ?? writeHandler }
    /// The handler's deadline and what happens without one (`handler` in the definition).
    public internal(set) var handling = HandlerDefinition()
    /// The values a central's write may leave (`accept` in the definition), checked before
    /// any handler or hook; nil for none. A `let`: the write path reads it on every write,
    /// and a constant needs no exclusivity check.
    public let accept: AcceptRule?

    init(
        id: String, uuid: BluetoothUUID, kind: Kind, access: AttributeAccess,
        minLength: Int, maxLength: Int, value: [UInt8], accept: AcceptRule? = nil
    ) {
        self.id = id
        self.uuid = uuid
        self.kind = kind
        self.access = access
        self.minLength = minLength
        self.maxLength = maxLength
        self.initialValue = value
        self.value = value
        self.accept = accept
    }

    public var isCharacteristic: Bool {
        if case .characteristic = kind { return true }
        return false
    }
}
