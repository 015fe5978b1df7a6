// SPDX-License-Identifier: MIT

/// One GATT service (`org.bluez.GattService1`).
public struct ServiceDefinition: Sendable, Equatable {
    /// Unique across services, characteristics and descriptors of the file.
    public var id: String
    /// Never 0x1800 (GAP) or 0x1801 (GATT): bluetoothd serves those itself.
    public var uuid: BluetoothUUID
    public var primary: Bool
    /// Ids of included services of the same file; acyclic, never the service itself.
    public var includes: [String]
    public var characteristics: [CharacteristicDefinition]
    /// The handle of the service declaration, when the definition pins it (`handle`); its
    /// attributes then take the handles after it (`HandleLayout`).
    public var handle: UInt16?
    /// JSON path of this service in the file (`services[1]`), for messages; empty when built in code.
    public var sourcePath: String

    public init(
        id: String, uuid: BluetoothUUID, primary: Bool = true, includes: [String] = [],
        characteristics: [CharacteristicDefinition] = [], sourcePath: String = ""
    ) {
        self.id = id
        self.uuid = uuid
        self.primary = primary
        self.includes = includes
        self.characteristics = characteristics
        self.sourcePath = sourcePath
    }
}
