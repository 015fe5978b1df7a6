// SPDX-License-Identifier: MIT

extension AdvertisingPayload {
    /// Computes the packets bluetoothd 5.66 + the kernel build for `advertisement`.
    public init(_ advertisement: AdvertisementDefinition) {
        var builder = AdvertisingPayloadBuilder(advertisement)
        builder.build()
        self.init(
            advertisingData: builder.advertisingData, scanResponse: builder.scanResponse,
            refusals: builder.refusals, notes: builder.notes)
    }
}

/// The step-by-step construction behind `AdvertisingPayload.init(_:)`, in bluetoothd's order.
struct AdvertisingPayloadBuilder {
    let advertisement: AdvertisementDefinition
    var advertisingData = AdvertisingPayload.Packet(name: "advertising data")
    var scanResponse = AdvertisingPayload.Packet(name: "scan response")
    var refusals: [String] = []
    var notes: [String] = []

    init(_ advertisement: AdvertisementDefinition) {
        self.advertisement = advertisement
    }

    /// Connectable with a secondary channel: no scan response, the name goes into the AD.
    var nameInAdvertisingData: Bool { advertisement.type == .peripheral && advertisement.secondaryChannel != nil }

    mutating func build() {
        uuidLists(advertisement.serviceUUIDs, source: "serviceUUIDs", kind: "service UUIDs", types: (0x03, 0x05, 0x07))
        uuidLists(advertisement.solicitUUIDs, source: "solicitUUIDs", kind: "solicit UUIDs", types: (0x14, 0x1F, 0x15))
        for entry in advertisement.manufacturerData {
            let company = "0x" + hex4(entry.companyID).lowercased()
            add(
                .init(
                    type: 0xFF, typeName: "manufacturer data", detail: "\(company) (\(bytes(entry.value.count)))",
                    source: "manufacturerData \(company)", length: 4 + entry.value.count,
                    payloadLength: entry.value.count))
        }
        for entry in advertisement.serviceData {
            let width = entry.uuid.byteWidth
            let type: UInt8 = width == 2 ? 0x16 : width == 4 ? 0x20 : 0x21
            add(
                .init(
                    type: type, typeName: "service data", detail: "\(entry.uuid.shortForm) (\(bytes(entry.value.count)))",
                    source: "serviceData \(entry.uuid.shortForm)", length: 2 + width + entry.value.count,
                    payloadLength: entry.value.count))
        }
        if nameInAdvertisingData, let name = advertisement.localName, !name.isEmpty {
            advertisingData.structures.append(nameStructure(name, after: advertisingData.length))
            notes.append("connectable with a secondary channel: no scan response, so the name is in the advertising data")
        }
        appearance()
        rawData()
        flags()
        if advertisement.includes.contains(.txPower) {
            add(.init(type: 0x0A, typeName: "tx power level", source: "includes tx-power", length: 3, origin: .kernel))
        }
        if advertisement.includes.contains(.appearance) {
            add(
                .init(
                    type: 0x19, typeName: "space kept for the adapter's appearance", source: "includes appearance",
                    length: 4,
                    origin: .reserved))
        }
        buildScanResponse()
    }

    private mutating func add(_ structure: AdvertisingPayload.Structure) {
        advertisingData.structures.append(structure)
    }

    private func bytes(_ count: Int) -> String { "\(count) byte\(count == 1 ? "" : "s")" }

    /// One list per UUID width, in the order 16, 32, 128 bits (`serialize_uuids`).
    private mutating func uuidLists(
        _ uuids: [BluetoothUUID], source: String, kind: String, types: (UInt8, UInt8, UInt8)
    ) {
        for (width, type, label) in [(2, types.0, "16-bit"), (4, types.1, "32-bit"), (16, types.2, "128-bit")] {
            let members = uuids.filter { $0.byteWidth == width }
            guard !members.isEmpty else { continue }
            add(
                .init(
                    type: type, typeName: "\(label) \(kind)", detail: "(\(members.map(\.shortForm).joined(separator: ",")))",
                    source: source, length: 2 + width * members.count))
        }
    }

    /// `serialize_name`: Complete Local Name when it fits in what is left of 31 bytes,
    /// else Shortened Local Name cut (in bytes) to fit.
    func nameStructure(_ name: String, after used: Int) -> AdvertisingPayload.Structure {
        let utf8 = Array(name.utf8)
        let room = max(0, AdvertisingPayload.legacyLimit - used - 2)
        if utf8.count <= room {
            return .init(
                type: 0x09, typeName: "complete local name", detail: "\"\(name)\"", source: "localName",
                length: 2 + utf8.count, payloadLength: utf8.count)
        }
        let kept = String(decoding: utf8.prefix(room), as: UTF8.self)
        return .init(
            type: 0x08, typeName: "shortened local name", detail: "\"\(kept)\" (\(utf8.count - room) of \(utf8.count) bytes cut)",
            source: "localName", length: 2 + room, payloadLength: room)
    }

    private mutating func appearance() {
        if let value = advertisement.appearance {
            add(
                .init(
                    type: 0x19, typeName: "appearance", detail: "0x" + hex4(value).lowercased(), source: "appearance",
                    length: 4))
        } else if advertisement.includes.contains(.appearance) {
            // generate_adv_data: "TODO: Get the appearance from the adaptor" -> 0x0000.
            add(.init(type: 0x19, typeName: "appearance", detail: "0x0000", source: "includes appearance", length: 4))
            notes.append(
                "includes \"appearance\": bluetoothd 5.66 advertises appearance 0x0000 and asks the kernel for the "
                    + "adapter's; set \"appearance\" to a value instead")
        }
    }

    private mutating func rawData() {
        for entry in advertisement.data {
            let typeText = "0x" + hex2(entry.type).lowercased()
            if let generated = AdvertisingPayload.typesBlueZGenerates[entry.type] {
                refusals.append(
                    "data type \(typeText) (\(generated)) is one bluetoothd generates itself; bluetoothd 5.66 refuses "
                        + "it in \"data\" (\"Failed to parse advertisement.\")")
            }
            add(
                .init(
                    type: entry.type, typeName: "data", detail: "\(typeText) (\(bytes(entry.value.count)))",
                    source: "data \(typeText)", length: 2 + entry.value.count, payloadLength: entry.value.count))
        }
    }

    /// bluetoothd stores Flags with the raw data, after it, when `Discoverable` is true.
    private mutating func flags() {
        if advertisement.discoverable {
            let mode = advertisement.discoverableTimeout.map { _ in "limited discoverable" } ?? "general discoverable"
            add(.init(type: 0x01, typeName: "flags", detail: "(\(mode))", source: "discoverable", length: 3))
        } else if advertisement.type == .peripheral {
            notes.append(
                "not discoverable: generic scanners ignore it, and if the adapter itself is discoverable the kernel "
                    + "adds Flags (3 bytes), leaving \(AdvertisingPayload.legacyLimit - 3 - advertisingData.length) "
                    + "bytes free")
        }
    }

    private mutating func buildScanResponse() {
        if nameInAdvertisingData {
            if advertisement.includes.contains(.localName) {
                notes.append("includes \"local-name\" with a secondary channel: there is no scan response to carry it")
            }
            return
        }
        if advertisement.includes.contains(.appearance) {
            scanResponse.structures.append(
                .init(
                    type: 0x19, typeName: "appearance of the adapter", source: "includes appearance", length: 4,
                    origin: .kernel))
        }
        if let name = advertisement.localName, !name.isEmpty {
            // bluetoothd sizes the name alone (its scan response holds nothing else).
            scanResponse.structures.append(nameStructure(name, after: 0))
        }
        if advertisement.includes.contains(.localName) {
            // The kernel uses the adapter name when it is at most 10 bytes, else a
            // shortened name of 10 bytes: at most 2 + 10 + 1 (it counts the NUL).
            scanResponse.structures.append(
                .init(
                    type: 0x09, typeName: "local name of the adapter", source: "includes local-name", length: 13,
                    origin: .kernel,
                    isVariable: true))
            notes.append("includes \"local-name\": the kernel adds the adapter's name (up to 13 bytes; depends on the adapter)")
        }
    }
}
