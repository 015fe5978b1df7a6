// SPDX-License-Identifier: MIT

import ControlAPI
import DBusKit
import DaemonCore
import Logging

/// L2CAP channels over the control API (docs/control-api.md, "Channels"): a program
/// registers to take a channel's connections and gets each as a descriptor; subscribers
/// hear `ChannelOpened`/`ChannelClosed`.
extension ControlManager {
    /// How long gattd waits for a taker's answer before refusing the channel.
    static let channelTakerTimeout: Duration = .seconds(10)

    /// `RegisterChannel(s channel, o object)`: the caller's object takes `channel`'s
    /// connections from now on. Refused for an unknown channel, one that runs its own
    /// program, one that does not listen, and one another program has.
    func registerChannel(_ channel: String, object: ObjectPath, call: MethodCall) {
        guard let sender = call.sender else { return call.fail(.failed("no sender")) }
        guard let server = channels, let definition = server.definitions.first(where: { $0.id == channel }) else {
            return refuse(call, .failed("no channel \"\(channel)\" in the definition"))
        }
        if let program = definition.program {
            return refuse(call, .failed("channel \"\(channel)\" runs its program \(program[0]) for each connection"))
        }
        guard server.psms[channel] != nil else {
            return refuse(call, .failed("channel \"\(channel)\" does not listen (see gattd's log or gattd --doctor)"))
        }
        if let holder = channelTakers[channel], holder.sender != sender || holder.object != object {
            return refuse(call, .alreadyClaimed(id: channel, by: "\(holder.sender) \(holder.object.rawValue)"))
        }
        if channelTakers[channel] == nil {
            // Only now does the kernel take channels on the PSM (fail closed: without a
            // taker it answers "PSM not supported").
            if let problem = server.takerRegistered(channel) {
                return refuse(call, .failed("channel \"\(channel)\" cannot listen: \(problem)"))
            }
            let watch = connection.whenNameLeaves(sender) { [weak self] in
                self?.endChannelTaker(channel, reason: "left the bus")
            }
            channelTakers[channel] = (sender, object, watch)
        }
        logger.info(
            "channel taker registered", metadata: ["channel": "\(channel)", "taker": "\(sender) \(object.rawValue)"])
        call.reply()
    }

    /// `UnregisterChannel(s channel)`: the caller no longer takes `channel`.
    func unregisterChannel(_ channel: String, call: MethodCall) {
        guard let holder = channelTakers[channel], holder.sender == call.sender else {
            return refuse(call, .notRegistered(channel))
        }
        endChannelTaker(channel, reason: "unregistered")
        call.reply()
    }

    private func endChannelTaker(_ channel: String, reason: String) {
        guard let entry = channelTakers.removeValue(forKey: channel) else { return }
        entry.watch.cancel()
        channels?.takerLeft(channel)
        logger.info(
            "channel taker gone; its channel no longer listens",
            metadata: ["channel": "\(channel)", "taker": "\(entry.sender) \(entry.object.rawValue)", "reason": "\(reason)"])
    }

    /// The registered taker of `channel` as `ChannelServer` asks for it: calls
    /// `org.gattd.ChannelTaker1.Open(h channel, a{sv} info)` on the taker's object; a reply
    /// accepts, an error or no answer within 10 s declines.
    public func channelHandoff(_ channel: String) -> ChannelServer.Handoff? {
        guard let taker = channelTakers[channel] else { return nil }
        return { [weak self] opened, descriptor, answer in
            guard let self else { return answer("gattd stops") }
            self.connection.call(
                destination: taker.sender, path: taker.object, interface: ControlNames.channelTakerInterface,
                member: ControlNames.channelTakerOpen,
                arguments: [.unixFD(descriptor), ControlKey.dictionary(Self.channelInfo(opened))],
                timeout: Self.channelTakerTimeout
            ) { result in
                switch result {
                case .success: answer(nil)
                case .failure(let error): answer("\(error.name): \(error.message)")
                }
            }
        }
    }

    /// `ListChannels() -> aa{sv}`: each channel of the definition with its PSM (when gattd
    /// holds one), whether it listens now (a `program`'s always, a taker's while one is
    /// registered), security, taker, and the connections open now.
    func listChannels() -> DBusValue {
        guard let server = channels else { return .array(elementSignature: "a{sv}", []) }
        let open = server.openChannels
        return .array(
            elementSignature: "a{sv}",
            server.definitions.map { definition in
                var entries: [(ControlKey, DBusValue)] = [
                    (.id, .string(definition.id)), (.service, .string(definition.service)),
                    (.security, .string(definition.security.rawValue)),
                    (.listening, .bool(server.isListening(definition.id))),
                ]
                if let psm = server.psms[definition.id] { entries.append((.psm, .uint16(psm))) }
                if case .failed(let error)? = server.outcomes[definition.id] {
                    entries.append((.error, .string("\(error)")))
                }
                if let program = definition.program {
                    entries.append((.program, .string(program[0])))
                } else if let taker = channelTakers[definition.id] {
                    entries.append((.taker, .string("\(taker.sender) \(taker.object.rawValue)")))
                }
                let mine = open.filter { $0.channel == definition.id }
                entries.append(
                    (.open, .array(elementSignature: "a{sv}", mine.map { ControlKey.dictionary(Self.channelInfo($0)) })))
                return ControlKey.dictionary(entries)
            })
    }

    /// `ChannelOpened(s channel, a{sv} info)` / `ChannelClosed(s channel, a{sv} info)`.
    public func channelEvent(_ event: ChannelServer.Event) {
        switch event {
        case .opened(let channel):
            emitEvent(.channelOpened, [.string(channel.channel), ControlKey.dictionary(Self.channelInfo(channel))])
        case .closed(let channel, let reason):
            emitEvent(
                .channelClosed,
                [.string(channel.channel), ControlKey.dictionary(Self.channelInfo(channel) + [(.reason, .string(reason))])])
        }
    }

    static func channelInfo(_ channel: ChannelServer.OpenChannel) -> [(ControlKey, DBusValue)] {
        var entries: [(ControlKey, DBusValue)] = [
            (.serial, .uint32(channel.serial)), (.psm, .uint16(channel.psm)), (.address, .string(channel.address)),
            (.addressType, .string(channel.addressType)), (.sendMTU, .uint16(UInt16(clamping: channel.sendMTU))),
            (.receiveMTU, .uint16(UInt16(clamping: channel.receiveMTU))), (.takenBy, .string(channel.takenBy)),
            (.bytesIn, .uint64(channel.bytesFromCentral)), (.bytesOut, .uint64(channel.bytesToCentral)),
        ]
        if let device = try? ObjectPath(channel.device), !channel.device.isEmpty {
            entries.append((.device, .objectPath(device)))
        }
        return entries
    }
}
