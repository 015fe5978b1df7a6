// SPDX-License-Identifier: MIT

/// One GATT descriptor (`org.bluez.GattDescriptor1`).
public struct DescriptorDefinition: Sendable, Equatable {
    /// Unique across the file; derived as `<characteristic id>.<short uuid>` when absent.
    public var id: String
    public var uuid: BluetoothUUID
    public var flags: [DescriptorFlag]
    public var value: [UInt8]
    public var minLength: Int
    public var maxLength: Int
    /// The descriptor's handle, when the definition pins it (`handle`).
    public var handle: UInt16?
    /// JSON path in the file; empty when built in code.
    public var sourcePath: String

    public init(
        id: String, uuid: BluetoothUUID, flags: [DescriptorFlag], value: [UInt8] = [], minLength: Int = 0,
        maxLength: Int = 512, sourcePath: String = ""
    ) {
        self.id = id
        self.uuid = uuid
        self.flags = flags
        self.value = value
        self.minLength = minLength
        self.maxLength = maxLength
        self.sourcePath = sourcePath
    }
}
