// SPDX-License-Identifier: MIT

/// One LE advertisement (`org.bluez.LEAdvertisement1`).
///
/// Optional properties that are nil are not exported. Intervals and `txPower` are only
/// honoured by bluetoothd 5.66 when it runs with experimental features.
public struct AdvertisementDefinition: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// Connectable.
        case peripheral
        /// Non-connectable; never discoverable.
        case broadcast
    }

    /// Items bluetoothd generates into the advertising data (`Includes`).
    public enum Include: String, Sendable, Equatable, CaseIterable {
        case txPower = "tx-power"
        case appearance = "appearance"
        case localName = "local-name"
    }

    public enum SecondaryChannel: String, Sendable, Equatable, CaseIterable {
        case oneM = "1M"
        case twoM = "2M"
        case coded = "Coded"
    }

    /// Unique among advertisements; derived `adv`, `adv-2`, ... when absent.
    public var id: String
    public var type: Kind
    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID]
    public var solicitUUIDs: [BluetoothUUID]
    /// Company identifier -> payload, in file order.
    public var manufacturerData: [(companyID: UInt16, value: [UInt8])]
    /// Service UUID -> payload, in file order.
    public var serviceData: [(uuid: BluetoothUUID, value: [UInt8])]
    /// Raw AD type -> payload, in file order.
    public var data: [(type: UInt8, value: [UInt8])]
    public var appearance: UInt16?
    public var includes: [Include]
    public var discoverable: Bool
    /// Seconds; never more than `timeout` when both are set.
    public var discoverableTimeout: UInt16?
    /// Seconds per rotation slot when instances share the controller.
    public var duration: UInt16?
    /// Seconds until bluetoothd removes the advertisement.
    public var timeout: UInt16?
    /// Milliseconds, 20...10485759, `minInterval <= maxInterval`.
    public var minInterval: UInt32?
    public var maxInterval: UInt32?
    /// dBm, -127...20.
    public var txPower: Int16?
    public var secondaryChannel: SecondaryChannel?
    /// Registered at startup (default true).
    public var enabled: Bool
    /// Register again after a central disconnects (default false).
    public var readvertiseAfterDisconnect: Bool
    /// JSON path in the file (`advertisements[0]`); empty when built in code.
    public var sourcePath: String

    public init(
        id: String, type: Kind = .peripheral, localName: String? = nil, serviceUUIDs: [BluetoothUUID] = [],
        solicitUUIDs: [BluetoothUUID] = [], manufacturerData: [(companyID: UInt16, value: [UInt8])] = [],
        serviceData: [(uuid: BluetoothUUID, value: [UInt8])] = [], data: [(type: UInt8, value: [UInt8])] = [],
        appearance: UInt16? = nil, includes: [Include] = [], discoverable: Bool? = nil,
        discoverableTimeout: UInt16? = nil, duration: UInt16? = nil, timeout: UInt16? = nil,
        minInterval: UInt32? = nil, maxInterval: UInt32? = nil, txPower: Int16? = nil,
        secondaryChannel: SecondaryChannel? = nil, enabled: Bool = true, readvertiseAfterDisconnect: Bool = false,
        sourcePath: String = ""
    ) {
        self.id = id
        self.type = type
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.solicitUUIDs = solicitUUIDs
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.data = data
        self.appearance = appearance
        self.includes = includes
        self.discoverable = discoverable ?? (type == .peripheral)
        self.discoverableTimeout = discoverableTimeout
        self.duration = duration
        self.timeout = timeout
        self.minInterval = minInterval
        self.maxInterval = maxInterval
        self.txPower = txPower
        self.secondaryChannel = secondaryChannel
        self.enabled = enabled
        self.readvertiseAfterDisconnect = readvertiseAfterDisconnect
        self.sourcePath = sourcePath
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.manufacturerData.elementsEqual(rhs.manufacturerData, by: { $0 == $1 }),
            lhs.serviceData.elementsEqual(rhs.serviceData, by: { $0 == $1 }),
            lhs.data.elementsEqual(rhs.data, by: { $0 == $1 })
        else { return false }
        guard lhs.id == rhs.id, lhs.type == rhs.type, lhs.localName == rhs.localName,
            lhs.serviceUUIDs == rhs.serviceUUIDs, lhs.solicitUUIDs == rhs.solicitUUIDs,
            lhs.appearance == rhs.appearance, lhs.includes == rhs.includes, lhs.discoverable == rhs.discoverable
        else { return false }
        guard lhs.discoverableTimeout == rhs.discoverableTimeout, lhs.duration == rhs.duration,
            lhs.timeout == rhs.timeout, lhs.minInterval == rhs.minInterval, lhs.maxInterval == rhs.maxInterval,
            lhs.txPower == rhs.txPower, lhs.secondaryChannel == rhs.secondaryChannel
        else { return false }
        return lhs.enabled == rhs.enabled && lhs.readvertiseAfterDisconnect == rhs.readvertiseAfterDisconnect
            && lhs.sourcePath == rhs.sourcePath
    }
}
