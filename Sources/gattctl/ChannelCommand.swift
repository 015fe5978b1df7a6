// SPDX-License-Identifier: MIT

import ArgumentParser
import ControlAPI
import DBusKit
import Glibc
import Mainloop

/// `gattctl channel ID -- COMMAND [ARG...]`: takes the L2CAP channel ID's connections and
/// runs COMMAND for each with the channel on its standard input and output.
struct ChannelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channel",
        abstract: "Take an L2CAP channel's connections; run COMMAND for each, the channel on stdin and stdout.",
        discussion: """
            Registers with gattd as the taker of channel ID (RegisterChannel) and waits. For each \
            connection a central opens, gattd hands over the channel; gattctl accepts it, prints \
            "opened <address> <address type> psm=<PSM> send-mtu=<n> receive-mtu=<n>", and runs \
            COMMAND (no shell) with the channel as its standard input and output: one read is one \
            SDU from the central, one write one SDU to it (at most send-mtu bytes). It also gets \
            GATTD_CHANNEL, GATTD_PSM, GATTD_DEVICE (address), GATTD_ADDRESS_TYPE, \
            GATTD_DEVICE_PATH, GATTD_SEND_MTU and GATTD_RECEIVE_MTU. COMMAND closing its standard \
            input and output, or exiting, closes the channel. Runs until SIGINT or SIGTERM; \
            connections while it does not run are refused. The channel must have no "program" \
            in the definition. See docs/channels.md.

            \(ExitStatus.helpText)
            """)

    @Argument(help: "The channel's id in the definition.")
    var id: String

    @Argument(parsing: .postTerminator, help: "The command to run per connection, after --.")
    var command: [String] = []

    func validate() throws {
        guard !command.isEmpty else { throw ValidationError("name the command after --") }
    }

    func run() throws {
        let client = try ControlClient()
        let taker = Taker(id: id, command: command, loop: client.loop)
        let path: ObjectPath = "/org/gattd/ctl/channel"
        do throws(DBusError) {
            try client.connection.export(taker, at: path)
        } catch {
            throw Failure(.unreachable, "cannot export the taker object: \(error.message)")
        }
        _ = try client.call(.registerChannel, [.string(id), .objectPath(path)])
        printLine("taking channel \(id)")
        var stop = false
        let signals = [SIGINT, SIGTERM].map { signo in client.loop.onSignal(signo) { stop = true } }
        let children = client.loop.onSignal(SIGCHLD) { taker.reap() }
        while !stop {
            _ = client.loop.run(until: { stop }, timeout: .seconds(3600))
        }
        for watch in signals { watch.cancel() }
        children.cancel()
        taker.reap()
    }
}

private struct SpawnError: Error {
    let code: Int32
}

/// The object gattd calls: `org.gattd.ChannelTaker1.Open(h channel, a{sv} info)`.
private final class Taker: DBusObject {
    let id: String
    let command: [String]
    let loop: EventLoop
    private var running: Set<pid_t> = []

    init(id: String, command: [String], loop: EventLoop) {
        self.id = id
        self.command = command
        self.loop = loop
    }

    let interfaces: [DBusInterface] = [
        DBusInterface(
            name: ControlNames.channelTakerInterface,
            methods: [
                DBusMethod(ControlNames.channelTakerOpen, inSignature: "ha{sv}") { (taker: Taker, call) in taker.open(call) }
            ])
    ]

    func open(_ call: MethodCall) {
        guard let arguments = try? call.arguments(), case .unixFD(let fd)? = arguments.first else {
            return call.fail(.invalidArgs("Open takes (ha{sv})"))
        }
        let info = arguments[1]
        let text = { (key: ControlKey) in info.variantDictionaryValue(key.rawValue)?.asString ?? "" }
        let number = { (key: ControlKey) in info.variantDictionaryValue(key.rawValue)?.asUInt16.map { String($0) } ?? "" }
        // The central's MTU (BT_SNDMTU), as the kernel says it.
        var mtu: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        let sendMTU = getsockopt(fd, 274, 12, &mtu, &length) == 0 ? String(mtu) : number(.sendMTU)
        // COMMAND reads and writes blocking, as programs on a terminal or a pipe do.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        let device = info.variantDictionaryValue(ControlKey.device.rawValue)?.asObjectPath?.rawValue ?? ""
        let environment = [
            "GATTD_CHANNEL=\(id)", "GATTD_PSM=\(number(.psm))", "GATTD_DEVICE=\(text(.address))",
            "GATTD_ADDRESS_TYPE=\(text(.addressType))", "GATTD_DEVICE_PATH=\(device)",
            "GATTD_SEND_MTU=\(sendMTU)", "GATTD_RECEIVE_MTU=\(number(.receiveMTU))",
        ]
        switch spawn(fd: fd, environment: environment) {
        case .success(let pid):
            close(fd)
            running.insert(pid)
            printLine(
                "opened \(text(.address)) \(text(.addressType)) psm=\(number(.psm)) "
                    + "send-mtu=\(sendMTU) receive-mtu=\(number(.receiveMTU))")
            call.reply()
        case .failure(let error):
            let code = error.code
            close(fd)
            printError("gattctl: cannot run \(command[0]): \(String(cString: strerror(code)))")
            call.fail(.failed("cannot run \(command[0]): \(String(cString: strerror(code)))"))
        }
    }

    private func spawn(fd: Int32, environment: [String]) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fd, 0)
        posix_spawn_file_actions_adddup2(&actions, fd, 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var inherited: [String] = []
        var cursor: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        while let current = cursor, let entry = current.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix("GATTD_") { inherited.append(text) }
            cursor = current + 1
        }
        let arguments = command.map { strdup($0) } + [nil]
        let variables = (inherited + environment).map { strdup($0) } + [nil]
        defer {
            for pointer in arguments { free(pointer) }
            for pointer in variables { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, command[0], &actions, &attributes, arguments, variables)
        return result == 0 ? .success(pid) : .failure(SpawnError(code: result))
    }

    /// Collects the commands that ended.
    func reap() {
        for pid in running {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { running.remove(pid) }
        }
    }
}
