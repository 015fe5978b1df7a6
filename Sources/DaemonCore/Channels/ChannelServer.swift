// SPDX-License-Identifier: MIT

public import BLEModel
import Glibc
public import Logging
public import Mainloop
public import SystemCalls

/// The L2CAP LE credit-based channels of the definition (`channels`): one kernel listener
/// per channel, and for each central that opens one, a taker or a refusal.
///
/// Each channel's PSM is held by a bound socket from the start. A channel with a `program`
/// listens always; one taken by a program registered over the control API listens only
/// while a taker is registered (`takerRegistered`/`takerLeft`): otherwise the kernel itself
/// answers a central "PSM not supported" (0x0002), and no other process can bind the PSM.
/// Nothing is deferred (`BT_DEFER_SETUP`): the kernel closes a deferred channel 40 s after
/// the central's request (docs/channels.md), so the kernel accepts each channel, and a
/// refusal after that (a taker that declines or does not answer, a program that cannot
/// start) closes the open channel at once, with the cause logged (docs/fail-closed.md). A
/// taker is the channel's `program`, started per channel with one end of a
/// `SOCK_SEQPACKET` pair on its standard input and output while gattd relays SDUs
/// (`ChannelRelay`), or the registered program (`takers`), which gets the channel's
/// descriptor. Everything runs on the loop.
public final class ChannelServer {
    /// A channel a central opened, as the control API reports it.
    public struct OpenChannel: Sendable, Equatable {
        /// gattd's number for it, unique while gattd runs.
        public var serial: UInt32
        /// The definition's channel id.
        public var channel: String
        public var psm: UInt16
        public var address: String
        public var addressType: String
        /// bluetoothd's `Device1` of the central (found by address and type), or "".
        public var device: String
        public var sendMTU: Int
        public var receiveMTU: Int
        /// Counted where gattd relays (a `program`); 0 for a passed descriptor.
        public var bytesFromCentral: UInt64 = 0
        public var bytesToCentral: UInt64 = 0
        /// `program` (relayed) or `taker` (descriptor passed to a registered program).
        public var takenBy: String
        /// The channel's receive buffer as the kernel reports it (`SO_RCVBUF`), 0 unknown.
        public var receiveBuffer = 0
    }

    public enum Event: Sendable, Equatable {
        case opened(OpenChannel)
        case closed(OpenChannel, reason: String)
    }

    /// What became of a channel's socket: bound to a PSM (listening or not), or failed.
    public enum Listener: Sendable, Equatable {
        case bound(psm: UInt16)
        case failed(SystemCallError)
    }

    /// A registered taker's answer to one channel: nil accepts it (the taker keeps the
    /// descriptor), text declines with that reason.
    public typealias Handoff = (_ channel: OpenChannel, _ descriptor: Int32, _ answer: @escaping (String?) -> Void) -> Void

    /// The largest SDU a central may send (`BT_RCVMTU`): as large as LE allows, which also
    /// gives the central more credits on kernels that grant them per SDU.
    public static let receiveMTU: UInt16 = 0xFFFF

    /// The channels served (fixed at start).
    public let definitions: [ChannelDefinition]
    private let loop: EventLoop
    private let logger: Logger
    /// Each channel's socket by channel id: bound to its PSM, and a listener (with its
    /// watch) while it takes channels.
    private var listeners: [String: (fd: Int32, watch: IOWatch?, psm: UInt16)] = [:]
    private var relays: [UInt32: (channel: OpenChannel, relay: ChannelRelay, child: ChildProcess?)] = [:]
    private var nextSerial: UInt32 = 1
    /// Outcome of each channel's listener, by channel id (after `listen`).
    public private(set) var outcomes: [String: Listener] = [:]

    /// The central's `Device1` path by `Address` and `AddressType` (never built from text).
    public var devicePath: (_ address: String, _ addressType: String) -> String? = { _, _ in nil }
    /// The registered taker of a channel id, if any.
    public var takers: (_ channel: String) -> Handoff? = { _ in nil }
    public var onEvent: ((Event) -> Void)?

    public init(definitions: [ChannelDefinition], loop: EventLoop, logger: Logger) {
        self.definitions = definitions
        self.loop = loop
        self.logger = logger
    }

    /// The channels open now, by serial.
    public var openChannels: [OpenChannel] {
        relays.values.map { entry in
            var channel = entry.channel
            channel.bytesFromCentral = entry.relay.bytesFromCentral
            channel.bytesToCentral = entry.relay.bytesToCentral
            return channel
        }.sorted { $0.serial < $1.serial }
    }

    /// The PSMs held, by channel id (listening or not).
    public var psms: [String: UInt16] { listeners.mapValues(\.psm) }

    /// Whether the kernel takes channels on `channel`'s PSM now.
    public func isListening(_ channel: String) -> Bool { listeners[channel]?.watch != nil }

    /// Binds every channel's PSM: the definition's, else the one `saved` from an earlier
    /// run (when the kernel has it free), else one the kernel picks. A channel with a
    /// `program` listens at once (its program is checked: `checkPrograms`); the others wait
    /// for a taker (`takerRegistered`).
    @discardableResult
    public func listen(saved: [String: UInt16]) -> [String: Listener] {
        for definition in definitions {
            let outcome = bind(definition, saved: saved[definition.id])
            outcomes[definition.id] = outcome
            guard case .bound(let psm) = outcome else { continue }
            if definition.program != nil {
                do throws(SystemCallError) {
                    try startListening(definition)
                } catch {
                    if let bound = listeners.removeValue(forKey: definition.id) { SeqPacketSocket.close(bound.fd) }
                    outcomes[definition.id] = .failed(error)
                }
            } else {
                logger.info(
                    "channel's PSM held; it listens while a program has registered to take it",
                    metadata: metadata(definition, psm: psm))
            }
        }
        checkPrograms()
        return outcomes
    }

    /// Logs each channel whose `program` cannot start now (at start and at a reload): its
    /// connections would be refused.
    public func checkPrograms() {
        for definition in definitions {
            guard let argv = definition.program, let problem = ChildProcess.cannotRun(argv[0]) else { continue }
            logger.warning(
                "channel's program cannot start: \(problem); every connection to it will be closed at once",
                metadata: ["channel": "\(definition.id)", "program": "\(argv[0])"])
        }
    }

    /// A program has registered to take `channel`: its socket listens from now on. Returns
    /// why it cannot (`listen`'s error; the PSM stays held, not listening), nil when it does.
    public func takerRegistered(_ channel: String) -> String? {
        guard let definition = definitions.first(where: { $0.id == channel }), definition.program == nil,
            listeners[channel] != nil, !isListening(channel)
        else { return nil }
        do throws(SystemCallError) {
            try startListening(definition)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// `channel`'s taker is gone: channels already queued are refused (no taker), the
    /// listener is closed and the PSM bound again at once by a socket that does not listen,
    /// so the kernel answers "PSM not supported" and no other program takes the PSM.
    public func takerLeft(_ channel: String) {
        guard let definition = definitions.first(where: { $0.id == channel }), definition.program == nil,
            let listener = listeners[channel], let watch = listener.watch
        else { return }
        acceptAll(definition, listener.fd)
        watch.cancel()
        SeqPacketSocket.close(listener.fd)
        listeners[channel] = nil
        do throws(SystemCallError) {
            let fd = try L2CAPSocket.bind(
                psm: listener.psm, security: definition.security.kernelLevel, receiveMTU: Self.receiveMTU)
            listeners[channel] = (fd, nil, listener.psm)
            logger.info(
                "channel not listening: no program takes it; a central asking for it hears \"PSM not supported\"",
                metadata: metadata(definition, psm: listener.psm))
        } catch {
            outcomes[channel] = .failed(error)
            logger.error(
                "channel's PSM could not be held again: \(error); a taker cannot register until gattd restarts",
                metadata: metadata(definition, psm: listener.psm))
        }
    }

    private func startListening(_ definition: ChannelDefinition) throws(SystemCallError) {
        guard let bound = listeners[definition.id] else { return }
        try L2CAPSocket.startListening(bound.fd)
        let fd = bound.fd
        let watch = loop.watch(fd: fd, events: .readable) { [unowned self] _ in self.acceptAll(definition, fd) }
        listeners[definition.id] = (fd, watch, bound.psm)
        logger.info("channel listening", metadata: metadata(definition, psm: bound.psm))
    }

    private func metadata(_ definition: ChannelDefinition, psm: UInt16) -> Logger.Metadata {
        [
            "channel": "\(definition.id)", "psm": "0x\(String(psm, radix: 16))",
            "security": "\(definition.security.rawValue)",
        ]
    }

    private func bind(_ definition: ChannelDefinition, saved: UInt16?) -> Listener {
        let wanted = definition.psm ?? saved.flatMap { ChannelDefinition.dynamicPSMs.contains($0) ? $0 : nil } ?? 0
        var attempt = wanted
        while true {
            do throws(SystemCallError) {
                let fd = try L2CAPSocket.bind(
                    psm: attempt, security: definition.security.kernelLevel, receiveMTU: Self.receiveMTU)
                let psm: UInt16
                do throws(SystemCallError) {
                    psm = try L2CAPSocket.boundPSM(fd)
                } catch {
                    SeqPacketSocket.close(fd)
                    throw error
                }
                listeners[definition.id] = (fd, nil, psm)
                return .bound(psm: psm)
            } catch {
                // The PSM kept from the last run is taken: a new one is as good (phones
                // read it from the PSM characteristic).
                if definition.psm == nil, attempt != 0, error.code == EADDRINUSE {
                    logger.warning(
                        "channel's earlier PSM is taken; the kernel picks another",
                        metadata: ["channel": "\(definition.id)", "psm": "0x\(String(attempt, radix: 16))"])
                    attempt = 0
                    continue
                }
                return .failed(error)
            }
        }
    }

    /// Closes the listeners and every open channel (gattd stops); programs get SIGTERM.
    public func stop() {
        for (_, listener) in listeners {
            listener.watch?.cancel()
            SeqPacketSocket.close(listener.fd)
        }
        listeners = [:]
        for (_, entry) in relays.sorted(by: { $0.key < $1.key }) {
            entry.child?.terminate()
            entry.relay.close(reason: "gattd stops")
        }
    }

    // MARK: - Accepting

    private func acceptAll(_ definition: ChannelDefinition, _ listener: Int32) {
        while true {
            let accepted: (fd: Int32, peer: L2CAPSocket.Peer)?
            do throws(SystemCallError) {
                accepted = try L2CAPSocket.accept(listener)
            } catch {
                logger.error("cannot accept a channel", metadata: ["channel": "\(definition.id)", "error": "\(error)"])
                return
            }
            guard let accepted else { return }
            arrived(definition, fd: accepted.fd, peer: accepted.peer)
        }
    }

    /// What each accepted channel's receive buffer is asked to hold (L2CAPSocket
    /// .reserveReceiveBuffer): on kernels before 6.10 an SDU that does not fit is lost.
    public static let receiveBufferBytes: Int32 = 4 << 20

    private func arrived(_ definition: ChannelDefinition, fd: Int32, peer: L2CAPSocket.Peer) {
        // First thing: the kernel connected the channel as it queued it, and SDUs may come
        // from now on (a registered taker gets the buffer so too).
        let receiveBuffer = L2CAPSocket.reserveReceiveBuffer(fd, bytes: Self.receiveBufferBytes)
        let mtus = L2CAPSocket.mtus(fd)
        var channel = OpenChannel(
            serial: nextSerial, channel: definition.id, psm: listeners[definition.id]?.psm ?? peer.psm,
            address: peer.address, addressType: peer.addressType,
            device: devicePath(peer.address, peer.addressType) ?? "", sendMTU: max(mtus.send, 0),
            receiveMTU: max(mtus.receive, 0),
            takenBy: definition.program == nil ? "taker" : "program")
        channel.receiveBuffer = receiveBuffer ?? 0
        nextSerial &+= 1
        if nextSerial == 0 { nextSerial = 1 }
        if let argv = definition.program {
            startProgram(argv, for: channel, fd: fd)
        } else if let handoff = takers(definition.id) {
            handoff(channel, fd) { [weak self] declined in
                guard let self else { return SeqPacketSocket.close(fd) }
                if let declined { return self.refuse(channel, fd: fd, because: "the taker declined it: \(declined)") }
                self.acceptPassed(channel, fd: fd)
            }
        } else {
            refuse(channel, fd: fd, because: "no program has registered to take it (gattctl channel \(definition.id) -- ...)")
        }
    }

    /// The kernel has accepted the channel: refusing it now is disconnecting it (the
    /// central sees its open channel closed at once), for a taker's copy of the descriptor
    /// too.
    private func refuse(_ channel: OpenChannel, fd: Int32, because reason: String) {
        L2CAPSocket.disconnect(fd)
        SeqPacketSocket.close(fd)
        logger.warning("channel refused: \(reason)", metadata: metadata(channel))
    }

    private func acceptPassed(_ channel: OpenChannel, fd: Int32) {
        // The taker holds its own copy; gattd's must go, or the channel outlives the taker.
        SeqPacketSocket.close(fd)
        logger.info("channel opened", metadata: metadata(channel))
        onEvent?(.opened(channel))
    }

    /// Checks that the program can run (closing the channel when not), starts it and relays.
    private func startProgram(_ argv: [String], for channel: OpenChannel, fd: Int32) {
        if let problem = ChildProcess.cannotRun(argv[0]) {
            return refuse(channel, fd: fd, because: "its program cannot start: \(problem)")
        }
        let ends: (Int32, Int32)
        do throws(SystemCallError) {
            ends = try SeqPacketSocket.pair()
        } catch {
            return refuse(channel, fd: fd, because: "no socket pair for its program: \(error)")
        }
        let closeAccepted = { (reason: String, channel: OpenChannel) in
            SeqPacketSocket.close(ends.0)
            SeqPacketSocket.close(ends.1)
            self.refuse(channel, fd: fd, because: reason)
        }
        guard channel.sendMTU > 0 else { return closeAccepted("the kernel gives no MTU for it", channel) }
        // The program's end blocks, as a program reading its standard input expects.
        _ = fcntl(ends.1, F_SETFL, fcntl(ends.1, F_GETFL) & ~O_NONBLOCK)
        let serial = channel.serial
        let environment = [
            "GATTD_CHANNEL": channel.channel, "GATTD_PSM": "\(channel.psm)", "GATTD_DEVICE": channel.address,
            "GATTD_ADDRESS_TYPE": channel.addressType, "GATTD_DEVICE_PATH": channel.device,
            "GATTD_SEND_MTU": "\(channel.sendMTU)", "GATTD_RECEIVE_MTU": "\(channel.receiveMTU)",
        ]
        let child: ChildProcess
        do throws(ChildProcessError) {
            child = try ChildProcess.start(
                argv: argv, environment: environment, connectedTo: ends.1, loop: loop
            ) { [weak self] completion in
                self?.logger.info(
                    "channel program ended",
                    metadata: ["serial": "\(serial)", "program": "\(argv[0])", "outcome": "\(completion.outcome)"])
            }
        } catch {
            return closeAccepted("its program cannot start: \(error)", channel)
        }
        SeqPacketSocket.close(ends.1)
        let opened = channel
        let relay = ChannelRelay(
            central: fd, program: ends.0, sendMTU: channel.sendMTU, receiveMTU: channel.receiveMTU, loop: loop
        ) { [weak self] reason in
            self?.relayEnded(serial, reason: reason)
        }
        relays[serial] = (opened, relay, child)
        logger.info("channel opened", metadata: metadata(opened).merging(["program": "\(argv[0])"]) { $1 })
        onEvent?(.opened(opened))
    }

    private func relayEnded(_ serial: UInt32, reason: String) {
        guard let entry = relays.removeValue(forKey: serial) else { return }
        var channel = entry.channel
        channel.bytesFromCentral = entry.relay.bytesFromCentral
        channel.bytesToCentral = entry.relay.bytesToCentral
        logger.info(
            "channel closed: \(reason)",
            metadata: metadata(channel).merging([
                "bytes.in": "\(channel.bytesFromCentral)", "bytes.out": "\(channel.bytesToCentral)",
            ]) { $1 })
        onEvent?(.closed(channel, reason: reason))
    }

    private func metadata(_ channel: OpenChannel) -> Logger.Metadata {
        [
            "channel": "\(channel.channel)", "serial": "\(channel.serial)", "psm": "0x\(String(channel.psm, radix: 16))",
            "address": "\(channel.address)", "address.type": "\(channel.addressType)", "device": "\(channel.device)",
            "mtu.send": "\(channel.sendMTU)", "mtu.receive": "\(channel.receiveMTU)",
            "receive.buffer": "\(channel.receiveBuffer)",
        ]
    }
}
