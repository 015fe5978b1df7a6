// SPDX-License-Identifier: MIT

extension AdvertisingPayload {
    /// One sentence per reason bluetoothd would refuse this advertisement: each packet
    /// over its limit (saying by how many bytes and what to shorten or drop), then each
    /// refusal. Empty when it fits.
    public var problems: [String] {
        var result: [String] = []
        for packet in [advertisingData, scanResponse] where !packet.fits {
            result.append(Self.overflowMessage(packet))
        }
        return result + refusals
    }

    static func overflowMessage(_ packet: Packet) -> String {
        let over = packet.overflow
        var text = "\(packet.name) is \(packet.length) bytes, \(over) over the \(packet.limit)-byte legacy limit"
        var remedies: [String] = []
        let shrinkable = packet.structures.filter { $0.origin == .bluetoothd && $0.payloadLength >= over }
        for structure in shrinkable.sorted(by: { $0.payloadLength > $1.payloadLength }).prefix(2) {
            remedies.append(
                "shorten \(structure.source) by \(over) byte\(over == 1 ? "" : "s") (to \(structure.payloadLength - over))")
        }
        if packet.structures.contains(where: { $0.origin == .reserved }) && over <= 4 {
            remedies.append("set \"appearance\" instead of includes \"appearance\" (saves 4)")
        }
        if packet.structures.contains(where: { $0.origin == .kernel && $0.type == 0x19 }) && over <= 4 {
            remedies.append("drop includes \"appearance\" (4 bytes)")
        }
        let droppable = packet.structures.filter {
            $0.length >= over && $0.source != "discoverable" && $0.origin != .reserved && $0.type != 0x19
        }
        if !droppable.isEmpty {
            let drops = droppable.sorted { $0.length < $1.length }.prefix(3).map(describe)
            remedies.append("drop or move to another advertisement one of: " + drops.joined(separator: ", "))
        } else {
            // Nothing alone is big enough: name the biggest contributors.
            let biggest = packet.structures.filter { $0.origin != .reserved && $0.source != "discoverable" }
                .sorted { $0.length > $1.length }.prefix(3).map(describe)
            remedies.append("split it over several advertisements; the biggest parts are " + biggest.joined(separator: ", "))
        }
        if !remedies.isEmpty { text += "; " + remedies.joined(separator: "; or ") }
        return text
    }

    private static func describe(_ structure: Structure) -> String {
        "\(structure.source) [\(structure.summary) bytes]"
    }
}
