// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit

extension AdvertisementDefinition {
    /// One `org.bluez.LEAdvertisement1` property: its name, D-Bus type and how it is read
    /// from the definition (nil: not set, left out).
    typealias LEProperty = PropertyRow<AdvertisementDefinition>

    /// The properties bluetoothd reads, with the D-Bus types of docs/bluez-contract.md §8,
    /// in bluetoothd's parse order: the one table the interface description
    /// (`ExportedAdvertisement.interface`) and the values (`leAdvertisementProperties`)
    /// both come from.
    ///
    /// `Type` and `Discoverable` are always present (a missing `Type` means broadcast to
    /// bluetoothd). UUIDs go out in their shortest form (`180d`, `0001180d`, 128-bit),
    /// which is the width the byte budget (`AdvertisingPayload`) counts.
    static let leProperties: [LEProperty] = [
        LEProperty(name: "Type", signature: "s") { .string($0.type.rawValue) },
        LEProperty(name: "ServiceUUIDs", signature: "as") {
            $0.serviceUUIDs.isEmpty ? nil : .stringArray($0.serviceUUIDs.map(\.shortForm))
        },
        LEProperty(name: "SolicitUUIDs", signature: "as") {
            $0.solicitUUIDs.isEmpty ? nil : .stringArray($0.solicitUUIDs.map(\.shortForm))
        },
        LEProperty(name: "ManufacturerData", signature: "a{qv}") { definition in
            guard !definition.manufacturerData.isEmpty else { return nil }
            let entries = definition.manufacturerData.map {
                DBusDictionaryEntry(key: .uint16($0.companyID), value: .variant(.bytes($0.value)))
            }
            return .dictionary(keySignature: "q", valueSignature: "v", entries)
        },
        LEProperty(name: "ServiceData", signature: "a{sv}") { definition in
            guard !definition.serviceData.isEmpty else { return nil }
            let entries = definition.serviceData.map {
                DBusDictionaryEntry(key: .string($0.uuid.shortForm), value: .variant(.bytes($0.value)))
            }
            return .dictionary(keySignature: "s", valueSignature: "v", entries)
        },
        LEProperty(name: "Includes", signature: "as") {
            $0.includes.isEmpty ? nil : .stringArray($0.includes.map(\.rawValue))
        },
        LEProperty(name: "LocalName", signature: "s") { $0.localName.map(DBusValue.string) },
        LEProperty(name: "Appearance", signature: "q") { $0.appearance.map(DBusValue.uint16) },
        LEProperty(name: "Duration", signature: "q") { $0.duration.map(DBusValue.uint16) },
        LEProperty(name: "Timeout", signature: "q") { $0.timeout.map(DBusValue.uint16) },
        LEProperty(name: "Data", signature: "a{yv}") { definition in
            guard !definition.data.isEmpty else { return nil }
            let entries = definition.data.map {
                DBusDictionaryEntry(key: .byte($0.type), value: .variant(.bytes($0.value)))
            }
            return .dictionary(keySignature: "y", valueSignature: "v", entries)
        },
        LEProperty(name: "Discoverable", signature: "b") { .bool($0.discoverable) },
        LEProperty(name: "DiscoverableTimeout", signature: "q") { $0.discoverableTimeout.map(DBusValue.uint16) },
        LEProperty(name: "SecondaryChannel", signature: "s") { $0.secondaryChannel.map { .string($0.rawValue) } },
        LEProperty(name: "MinInterval", signature: "u") { $0.minInterval.map(DBusValue.uint32) },
        LEProperty(name: "MaxInterval", signature: "u") { $0.maxInterval.map(DBusValue.uint32) },
        LEProperty(name: "TxPower", signature: "n") { $0.txPower.map(DBusValue.int16) },
    ]

    /// The properties that are set, as (name, value), in `leProperties` order.
    var leAdvertisementProperties: [(String, DBusValue)] {
        Self.leProperties.compactMap { property in property.value(self).map { (property.name, $0) } }
    }

    /// Settings bluetoothd 5.66 ignores unless it runs with experimental features.
    var experimentalOnlySettings: [String] {
        var names: [String] = []
        if minInterval != nil { names.append("minInterval") }
        if maxInterval != nil { names.append("maxInterval") }
        if txPower != nil { names.append("txPower") }
        return names
    }
}
