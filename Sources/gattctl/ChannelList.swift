// SPDX-License-Identifier: MIT

import BLEModel
import ControlAPI
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
        let list = try client.call(.listChannels).first?.asArray ?? []
        channels = list.map { entry in
            let value = { (key: ControlKey) in entry.variantDictionaryValue(key.rawValue) }
            let open = (value(.open)?.asArray ?? []).map { item in
                let field = { (key: ControlKey) in item.variantDictionaryValue(key.rawValue) }
                return Open(
                    address: field(.address)?.asString ?? "", psm: Int(field(.psm)?.asUInt16 ?? 0),
                    sendMTU: Int(field(.sendMTU)?.asUInt16 ?? 0), receiveMTU: Int(field(.receiveMTU)?.asUInt16 ?? 0))
            }
            let taker =
                value(.program)?.asString.map { "program \($0)" } ?? value(.taker)?.asString.map { "taker \($0)" }
                ?? "no taker"
            return Channel(
                id: value(.id)?.asString ?? "", psm: value(.psm)?.asUInt16.map(Int.init),
                security: value(.security)?.asString ?? "", error: value(.error)?.asString, taker: taker, open: open)
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

    var json: JSONValue {
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
