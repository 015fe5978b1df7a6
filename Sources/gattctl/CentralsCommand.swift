// SPDX-License-Identifier: MIT

import ArgumentParser
import BLEModel
import ControlAPI
import DBusKit
import Glibc

/// `gattctl centrals [--json]`: the centrals connected now.
struct CentralsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "centrals",
        abstract: "List the centrals connected now.",
        discussion: """
            One line per connected central: "<address> <name or -> mtu=<MTU or -> \
            max-update=<bytes or -> [bonded|paired] [trusted] since=<UTC time> \
            [subscribed=<id>,...] [channels=<id>:<psm>,...]" (the L2CAP channels it has open). The MTU is known once the central has made a request; the \
            characteristics it is subscribed to are known where bluetoothd gives each central \
            its own socket (acquireNotify characteristics, BlueZ 5.71 and later), and left \
            out otherwise. --json prints an array of objects (null where not known).

            \(ExitStatus.helpText)
            """)

    @Flag(name: .long, help: "Print a JSON array.")
    var json = false

    func run() throws {
        let client = try ControlClient()
        let centrals = try client.call(.listCentrals).first?.asArray ?? []
        let channels = try ChannelList(client)
        var objects: [JSONValue] = []
        for central in centrals {
            let value = { (key: ControlKey) in central.variantDictionaryValue(key.rawValue) }
            let address = value(.address)?.asString ?? ""
            let name = value(.name)?.asString
            let mtu = value(.mtu)?.asUInt16.map(Int.init)
            let maxUpdate = value(.maxUpdateLength)?.asUInt16.map(Int.init)
            let flag = { (key: ControlKey) in value(key)?.asBool ?? false }
            let since: Int =
                if case .uint64(let seconds)? = value(.connectedSince) { Int(clamping: seconds) } else { 0 }
            let subscribed = value(.subscribed)?.asStringArray
            if json {
                objects.append(
                    .object([
                        ("address", .string(address)),
                        ("addressType", value(.addressType)?.asString.map { .string($0) } ?? .null),
                        ("name", name.map { .string($0) } ?? .null), ("mtu", mtu.map { .number($0) } ?? .null),
                        ("maxUpdateLength", maxUpdate.map { .number($0) } ?? .null),
                        ("paired", .bool(flag(.paired))), ("bonded", .bool(flag(.bonded))),
                        ("trusted", .bool(flag(.trusted))), ("connectedSince", .number(since)),
                        ("subscribed", subscribed.map { .array($0.map { .string($0) }) } ?? .null),
                        ("channels", .array(channels.open(by: address).map { .string($0) })),
                    ]))
                continue
            }
            var words = [
                address, name ?? "-", "mtu=" + (mtu.map(String.init) ?? "-"),
                "max-update=" + (maxUpdate.map(String.init) ?? "-")
            ]
            if flag(.bonded) {
                words.append("bonded")
            } else if flag(.paired) {
                words.append("paired")
            }
            if flag(.trusted) { words.append("trusted") }
            words.append("since=" + Self.utc(since))
            if let subscribed {
                words.append("subscribed=" + (subscribed.isEmpty ? "-" : subscribed.joined(separator: ",")))
            }
            let open = channels.open(by: address)
            if !open.isEmpty { words.append("channels=" + open.joined(separator: ",")) }
            printLine(words.joined(separator: " "))
        }
        if json { printLine(JSONText.render(.array(objects))) }
    }

    /// `2026-11-26T21:05:00Z` for a Unix time in seconds.
    static func utc(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return String(seconds) }
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}

/// `gattctl disconnect ADDRESS`: drops a central's link.
struct DisconnectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disconnect",
        abstract: "Drop the link to a connected central.",
        discussion: """
            ADDRESS is the central's address, AA:BB:CC:DD:EE:FF (as `gattctl centrals` lists \
            it). bluetoothd disconnects it (Device1.Disconnect); a bonded central keeps its \
            keys and may reconnect. Prints "<address>: disconnected".

            \(ExitStatus.helpText)
            """)

    @Argument(help: "The central's address, AA:BB:CC:DD:EE:FF.")
    var address: String

    func run() throws {
        let client = try ControlClient()
        _ = try client.call(.disconnectCentral, [.string(address)])
        printLine("\(address.uppercased()): disconnected")
    }
}
