// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit

extension AdvertisementDefinition {
    /// The `org.bluez.LEAdvertisement1` properties bluetoothd reads, with the D-Bus types
    /// of docs/bluez-contract.md §8, in bluetoothd's parse order; only those that are set.
    ///
    /// The one place the model becomes D-Bus values. `Type` and `Discoverable` are always
    /// present (a missing `Type` means broadcast to bluetoothd). UUIDs go out in their
    /// shortest form (`180d`, `0001180d`, 128-bit), which is the width the byte budget
    /// (`AdvertisingPayload`) counts.
    var leAdvertisementProperties: [(String, DBusValue)] {
        var result: [(String, DBusValue)] = [("Type", .string(type.rawValue))]
        if !serviceUUIDs.isEmpty { result.append(("ServiceUUIDs", .stringArray(serviceUUIDs.map(\.shortForm)))) }
        if !solicitUUIDs.isEmpty { result.append(("SolicitUUIDs", .stringArray(solicitUUIDs.map(\.shortForm)))) }
        if !manufacturerData.isEmpty {
            let entries = manufacturerData.map {
                DBusDictionaryEntry(key: .uint16($0.companyID), value: .variant(.bytes($0.value)))
            }
            result.append(("ManufacturerData", .dictionary(keySignature: "q", valueSignature: "v", entries)))
        }
        if !serviceData.isEmpty {
            let entries = serviceData.map {
                DBusDictionaryEntry(key: .string($0.uuid.shortForm), value: .variant(.bytes($0.value)))
            }
            result.append(("ServiceData", .dictionary(keySignature: "s", valueSignature: "v", entries)))
        }
        if !includes.isEmpty { result.append(("Includes", .stringArray(includes.map(\.rawValue)))) }
        if let localName { result.append(("LocalName", .string(localName))) }
        if let appearance { result.append(("Appearance", .uint16(appearance))) }
        if let duration { result.append(("Duration", .uint16(duration))) }
        if let timeout { result.append(("Timeout", .uint16(timeout))) }
        if !data.isEmpty {
            let entries = data.map { DBusDictionaryEntry(key: .byte($0.type), value: .variant(.bytes($0.value))) }
            result.append(("Data", .dictionary(keySignature: "y", valueSignature: "v", entries)))
        }
        result.append(("Discoverable", .bool(discoverable)))
        if let discoverableTimeout { result.append(("DiscoverableTimeout", .uint16(discoverableTimeout))) }
        if let secondaryChannel { result.append(("SecondaryChannel", .string(secondaryChannel.rawValue))) }
        if let minInterval { result.append(("MinInterval", .uint32(minInterval))) }
        if let maxInterval { result.append(("MaxInterval", .uint32(maxInterval))) }
        if let txPower { result.append(("TxPower", .int16(txPower))) }
        return result
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
