// SPDX-License-Identifier: MIT

import DBusKit

/// gattd's channels as `ListChannels` reports them, for `status` and `centrals`.
struct ChannelList {
    struct Open {
        var address: String
        var psm: Int
        var sendMTU: Int
        var receiveMTU: Int
    }

    struct Channel {
        var id: String
        var psm: Int?
        var security: String
        var error: String?
        var taker: String
        var open: [Open]
    }

    let channels: [Channel]

    init(_ client: ControlClient) throws(Failure) {
        let list = try client.call("ListChannels").first?.asArray ?? []
        channels = list.map { entry in
            let value = { (key: String) in entry.variantDictionaryValue(key) }
            let open = (value("Open")?.asArray ?? []).map { item in
                let field = { (key: String) in item.variantDictionaryValue(key) }
                return Open(
                    address: field("Address")?.asString ?? "", psm: Int(field("PSM")?.asUInt16 ?? 0),
                    sendMTU: Int(field("SendMTU")?.asUInt16 ?? 0), receiveMTU: Int(field("ReceiveMTU")?.asUInt16 ?? 0))
            }
            let taker =
                value("Program")?.asString.map { "program \($0)" } ?? value("Taker")?.asString.map { "taker \($0)" }
                ?? "no taker"
            return Channel(
                id: value("Id")?.asString ?? "", psm: value("PSM")?.asUInt16.map(Int.init),
                security: value("Security")?.asString ?? "", error: value("Error")?.asString, taker: taker, open: open)
        }
    }

    static func hex(_ psm: Int) -> String { "0x" + String(psm, radix: 16) }

    /// `  firmware: psm 0x81, security encrypt, program cat, 1 open` or
    /// `  firmware: not listening (socket(...): ...)`.
    var lines: [String] {
        channels.map { channel in
            guard let psm = channel.psm else {
                return "  \(channel.id): not listening (\(channel.error ?? "unknown"))"
            }
            return "  \(channel.id): psm \(Self.hex(psm)), security \(channel.security), \(channel.taker), "
                + "\(channel.open.count) open"
        }
    }

    var json: JSONText.Value {
        .array(
            channels.map { channel in
                .object([
                    ("id", .string(channel.id)), ("psm", channel.psm.map { .number($0) } ?? .null),
                    ("security", .string(channel.security)), ("error", channel.error.map { .string($0) } ?? .null),
                    ("taker", .string(channel.taker)), ("open", .number(channel.open.count)),
                ])
            })
    }

    /// The channels `address` has open: `firmware:0x81`.
    func open(by address: String) -> [String] {
        channels.flatMap { channel in
            channel.open.filter { $0.address.uppercased() == address.uppercased() }.map { "\(channel.id):\(Self.hex($0.psm))" }
        }
    }
}
