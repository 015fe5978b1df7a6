// SPDX-License-Identifier: MIT

/// One GATT characteristic (`org.bluez.GattCharacteristic1`) and its behaviour.
public struct CharacteristicDefinition: Sendable, Equatable {
    /// Unique across the file; derived as `<service id>.<short uuid>` when absent.
    public var id: String
    public var uuid: BluetoothUUID
    /// Non-empty, no duplicates, in file order.
    public var flags: [CharacteristicFlag]
    /// Initial value; `minLength <= value.count <= maxLength`.
    public var value: [UInt8]
    /// Shortest value a write may leave (default 0).
    public var minLength: Int
    /// Longest value (default and maximum 512, the ATT limit).
    public var maxLength: Int
    /// Never 0x2902 (CCC) or 0x2900 (CEP): bluetoothd creates those.
    public var descriptors: [DescriptorDefinition]
    /// Whether written values survive restarts; nil = the daemon's default.
    public var persist: Bool?
    /// Timed value updates; only on readable or notifiable characteristics.
    public var update: UpdateDefinition?
    /// Minimum spacing between notifications in ms; nil = the daemon's default pacing.
    public var notifyIntervalMs: Int?
    /// Program run on each accepted write; only on writable characteristics.
    public var onWrite: WriteHook?
    /// What notifications do with values produced faster than the pacing (default latest).
    public var delivery: Delivery
    /// With `delivery` all: how many values may wait to be notified (default 64).
    public var queueLength: Int
    /// How the value reads as one typed value (`uint8`...`sfloat`, `utf8`), when the
    /// definition says: its `value` is a single typed value, or its `update` encodes into one
    /// slot. Tools show the value that way (`gattctl list`).
    public var valueType: String?
    /// Served by a program's handler: its deadline and what happens without one; nil:
    /// a handler may still claim it, with the defaults of `HandlerDefinition`.
    public var handler: HandlerDefinition?
    /// Notifications go to bluetoothd as datagrams on a socket it acquires
    /// (`AcquireNotify`) instead of D-Bus signals; needs the `notify` flag.
    public var acquireNotify: Bool
    /// Writes arrive from bluetoothd as datagrams on a socket it acquires (`AcquireWrite`)
    /// instead of `WriteValue` calls; only with `write-without-response` (no ATT error can
    /// be returned on that path).
    public var acquireWrite: Bool
    /// The handle of the characteristic's value, when the definition pins it (`handle`); the
    /// declaration is the handle before it (`HandleLayout`).
    public var handle: UInt16?
    /// Which values a central's write may leave (`accept`), checked before hooks and
    /// handlers; nil: any value of a fitting length.
    public var accept: AcceptRule?
    /// JSON path in the file (`services[0].characteristics[1]`); empty when built in code.
    public var sourcePath: String

    public init(
        id: String, uuid: BluetoothUUID, flags: [CharacteristicFlag], value: [UInt8] = [], minLength: Int = 0,
        maxLength: Int = 512, descriptors: [DescriptorDefinition] = [], persist: Bool? = nil,
        update: UpdateDefinition? = nil, notifyIntervalMs: Int? = nil, onWrite: WriteHook? = nil,
        delivery: Delivery = .latest, queueLength: Int = Self.defaultQueueLength, handler: HandlerDefinition? = nil,
        acquireNotify: Bool = false, acquireWrite: Bool = false, sourcePath: String = ""
    ) {
        self.id = id
        self.uuid = uuid
        self.flags = flags
        self.value = value
        self.minLength = minLength
        self.maxLength = maxLength
        self.descriptors = descriptors
        self.persist = persist
        self.update = update
        self.notifyIntervalMs = notifyIntervalMs
        self.onWrite = onWrite
        self.delivery = delivery
        self.queueLength = queueLength
        self.handler = handler
        self.acquireNotify = acquireNotify
        self.acquireWrite = acquireWrite
        self.sourcePath = sourcePath
    }

    public static let defaultQueueLength = 64
    public static let queueLengthRange: ClosedRange<Int64> = 1...4096
}
