// SPDX-License-Identifier: MIT

public import BLEModel
import ControlAPI
import DBusKit
import DaemonCore
import Glibc
import Mainloop
import SystemCalls

/// Reads what `gattd --doctor` reports, without changing anything: bluetoothd's version
/// (its process, asked with `--version`), the kernel release, each adapter's properties,
/// bluetoothd's main.conf and gattd's own status (docs/known-problems.md). Every call is
/// a read: `GetNameOwner`, `GetConnectionUnixProcessID`, `GetManagedObjects`, `GetStatus`.
public struct DoctorProbe {
    /// bluetoothd's configuration file; `--main-conf` overrides it.
    public static let defaultMainConf = "/etc/bluetooth/main.conf"
    /// Set to stand in for `uname -r` (the tests' known-bad kernels); the daemon reads it too.
    public static let kernelReleaseVariable = "GATTD_KERNEL_RELEASE"

    /// `--main-conf`; nil: bluetoothd's own `-f`/`--configfile`, else `defaultMainConf`.
    let mainConfPath: String?
    let environment: [String: String]
    let timeout: Duration = .seconds(5)
    /// The gattd to ask: `org.gattd`, or an instance's (`gattd --doctor --instance hci1`).
    public var controlBusName = ControlNames.busName

    public init(mainConfPath: String?, environment: [String: String]) {
        self.mainConfPath = mainConfPath
        self.environment = environment
    }

    /// Everything, read now. Never throws: what cannot be read is said in the facts.
    public func run() -> DoctorFacts {
        let kernel = Self.kernelRelease(environment: environment)
        let loop: EventLoop
        let connection: BusConnection
        do {
            loop = try EventLoop()
            connection = try BusConnection.system(loop: loop)
        } catch {
            return DoctorFacts(
                gattdVersion: gattdVersion, busError: "\(error)",
                bluetoothd: .init(running: false, versionNote: "not asked"), kernel: kernel, adapters: [],
                mainConf: readMainConf(commandLine: nil), gattd: .init(running: false, note: "not asked"))
        }
        let session = Session(loop: loop, connection: connection, timeout: timeout)
        var bluetoothd = DoctorFacts.Bluetoothd(running: false, versionNote: "bluetoothd is not running")
        var adapters: [DoctorFacts.Adapter] = []
        var adaptersNote: String?
        if session.hasOwner("org.bluez") {
            bluetoothd = version(session)
            switch session.call("org.bluez", "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects") {
            case .success(let arguments): adapters = Self.adapters(from: arguments.first)
            case .failure(let error): adaptersNote = "GetManagedObjects failed: \(error.name): \(error.message)"
            }
        }
        let gattd = gattdState(session)
        return DoctorFacts(
            gattdVersion: gattdVersion, bluetoothd: bluetoothd, kernel: kernel, adapters: adapters,
            adaptersNote: adaptersNote, mainConf: readMainConf(commandLine: bluetoothd.commandLine), gattd: gattd.state, refusals: gattd.refusals)
    }

    /// `GATTD_KERNEL_RELEASE` when set, else `uname`'s release.
    public static func kernelRelease(environment: [String: String]) -> KernelRelease? {
        if let forced = environment[kernelReleaseVariable], !forced.isEmpty { return KernelRelease(forced) }
        var names = utsname()
        guard uname(&names) == 0 else { return nil }
        let release = withUnsafeBytes(of: &names.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return KernelRelease(release)
    }

    /// `--main-conf`, else the file bluetoothd was started with (`-f FILE`,
    /// `--configfile FILE`, `--configfile=FILE`), else `/etc/bluetooth/main.conf`.
    func readMainConf(commandLine: [String]?) -> DoctorFacts.MainConf {
        var path = Self.defaultMainConf
        var origin = "default"
        if let mainConfPath {
            (path, origin) = (mainConfPath, "--main-conf")
        } else if let given = Self.configFile(in: commandLine ?? []) {
            (path, origin) = (given, "bluetoothd's -f")
        }
        var conf: DoctorFacts.MainConf
        do throws(SystemCallError) {
            let bytes = try SystemCall.readFile(path, limit: 1 << 20)
            conf = .init(path: path, settings: MainConfSettings.read(String(decoding: bytes, as: UTF8.self)))
        } catch {
            conf = .init(path: path, settings: nil, unreadableReason: "\(error.operation): \(error.reason)")
        }
        conf.origin = origin
        return conf
    }

    static func configFile(in commandLine: [String]) -> String? {
        for (index, argument) in commandLine.enumerated().dropFirst() {
            if argument == "-f" || argument == "--configfile" {
                return index + 1 < commandLine.count ? commandLine[index + 1] : nil
            }
            if argument.hasPrefix("--configfile=") { return String(argument.dropFirst("--configfile=".count)) }
            if argument.hasPrefix("-f"), argument.count > 2, !argument.hasPrefix("--") { return String(argument.dropFirst(2)) }
        }
        return nil
    }

    // MARK: bluetoothd's version

    /// The process that owns `org.bluez`, asked `--version`: first its executable
    /// (`/proc/PID/exe`, readable by root or bluetoothd's user), then the program its
    /// command line names (`/proc/PID/cmdline`, readable by anyone; differs when bluetoothd
    /// runs through a loader or an interpreter). An answer that is not a BlueZ version
    /// (`Python 3.11.2`) does not count.
    func version(_ session: Session) -> DoctorFacts.Bluetoothd {
        let pid: Int32
        switch session.call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
            [.string("org.bluez")])
        {
        case .success(let arguments):
            guard let value = arguments.first?.asUInt32 else {
                return .init(running: true, versionNote: "GetConnectionUnixProcessID gave no process id")
            }
            pid = Int32(bitPattern: value)
        case .failure(let error):
            return .init(running: true, versionNote: "the bus did not give org.bluez's process id (\(error.name))")
        }
        var tried: [String] = []
        var candidates: [[String]] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        if length > 0 {
            candidates.append([String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)])
        } else {
            tried.append("/proc/\(pid)/exe: \(String(cString: strerror(errno)))")
        }
        var commandLine: [String]?
        if let bytes = try? SystemCall.readFile("/proc/\(pid)/cmdline", limit: 1 << 16) {
            commandLine = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        }
        for candidate in Self.versionCommands(commandLine: commandLine ?? []) where !candidates.contains(candidate) {
            candidates.append(candidate)
        }
        for command in candidates {
            let shown = (command + ["--version"]).joined(separator: " ")
            if command[0].hasSuffix(" (deleted)") {
                tried.append("\(command[0]): replaced since bluetoothd started")
                continue
            }
            let answer = session.run(command + ["--version"])
            if let version = BlueZVersion(parsing: answer.output), answer.ok {
                let earlier = tried.isEmpty ? "" : "; " + tried.joined(separator: "; ")
                return .init(
                    running: true, pid: pid, version: version, versionNote: "from \(shown), pid \(pid)\(earlier)",
                    commandLine: commandLine)
            }
            tried.append("\(shown): \(answer.describe)")
        }
        if candidates.isEmpty { tried.append("/proc/\(pid)/cmdline names no absolute program") }
        return .init(
            running: true, pid: pid, versionNote: "pid \(pid): " + tried.joined(separator: "; "), commandLine: commandLine)
    }

    /// From bluetoothd's command line, the commands to ask `--version` after its
    /// executable: the line up to the argument named `bluetoothd` (a daemon started
    /// through a loader, `ld-linux-x86-64.so.2 --library-path ... bluetoothd`, or a wrapper
    /// that takes the program as an argument), then the program in argv[0]. Only absolute
    /// paths: a relative one would be looked up here, not where bluetoothd started.
    static func versionCommands(commandLine: [String]) -> [[String]] {
        guard let first = commandLine.first, first.hasPrefix("/") else { return [] }
        var commands: [[String]] = []
        if let index = commandLine.indices.dropFirst().first(where: {
            commandLine[$0].hasPrefix("/") && commandLine[$0].split(separator: "/").last == "bluetoothd"
        }) {
            commands.append(Array(commandLine[...index]))
        }
        commands.append([first])
        return commands
    }

    // MARK: Adapters

    static func adapters(from objects: DBusValue?) -> [DoctorFacts.Adapter] {
        var result: [DoctorFacts.Adapter] = []
        for entry in objects?.dictionaryEntries ?? [] {
            guard let path = entry.key.asObjectPath?.rawValue, let interfaces = entry.value.dictionaryEntries else {
                continue
            }
            func properties(_ name: String) -> DBusValue? {
                interfaces.first { $0.key.asString == name }?.value
            }
            guard let adapter1 = properties("org.bluez.Adapter1") else { continue }
            var adapter = DoctorFacts.Adapter(name: String(path.split(separator: "/").last ?? ""))
            adapter.address = adapter1.variantDictionaryValue("Address")?.asString
            adapter.powered = adapter1.variantDictionaryValue("Powered")?.asBool
            adapter.pairable = adapter1.variantDictionaryValue("Pairable")?.asBool
            adapter.discoverable = adapter1.variantDictionaryValue("Discoverable")?.asBool
            if let manager = properties("org.bluez.LEAdvertisingManager1") {
                adapter.advertising = advertisingManager(manager)
            }
            result.append(adapter)
        }
        return result.sorted { $0.name < $1.name }
    }

    static func advertisingManager(_ properties: DBusValue) -> DoctorFacts.AdvertisingManager {
        var manager = DoctorFacts.AdvertisingManager()
        manager.supportedInstances = properties.variantDictionaryValue("SupportedInstances")?.asByte.map(Int.init)
        manager.activeInstances = properties.variantDictionaryValue("ActiveInstances")?.asByte.map(Int.init)
        manager.supportedIncludes = properties.variantDictionaryValue("SupportedIncludes")?.asStringArray
        manager.supportedSecondaryChannels = properties.variantDictionaryValue("SupportedSecondaryChannels")?.asStringArray
        manager.supportedFeatures = properties.variantDictionaryValue("SupportedFeatures")?.asStringArray
        if let capabilities = properties.variantDictionaryValue("SupportedCapabilities")?.unwrappedVariant
            .variantDictionaryEntries
        {
            var values: [String: Int] = [:]
            for (key, value) in capabilities {
                switch value.unwrappedVariant {
                case .byte(let number): values[key] = Int(number)
                case .int16(let number): values[key] = Int(number)
                case .uint16(let number): values[key] = Int(number)
                case .int32(let number): values[key] = Int(number)
                case .uint32(let number): values[key] = Int(number)
                default: break
                }
            }
            manager.supportedCapabilities = values
        }
        return manager
    }

    // MARK: gattd

    func gattdState(_ session: Session) -> (state: DoctorFacts.Gattd, refusals: [Refusal]) {
        guard session.hasOwner(controlBusName) else {
            return (.init(running: false, note: "\(controlBusName) has no owner on the system bus"), [])
        }
        let status: DBusValue
        switch session.call(
            controlBusName, ControlNames.managerPath.rawValue, ControlNames.managerInterface,
            ControlMethod.getStatus.rawValue)
        {
        case .success(let arguments) where arguments.first != nil:
            status = arguments[0]
        case .success:
            return (.init(running: true, note: "GetStatus answered nothing"), [])
        case .failure(let error):
            return (.init(running: true, note: "GetStatus failed: \(error.name): \(error.message)"), [])
        }
        var channels: DBusValue?
        if case .success(let arguments) = session.call(
            controlBusName, ControlNames.managerPath.rawValue, ControlNames.managerInterface,
            ControlMethod.listChannels.rawValue)
        {
            channels = arguments.first
        }
        return Self.gattdState(status: status, channels: channels)
    }

    /// What gattd's `GetStatus` (and `ListChannels`, when it answered) say: its state for
    /// the report, and bluetoothd's refusals as gattd reports them (`Refusals`: the error's
    /// name and message as bluetoothd gave them), for matching the known problems.
    static func gattdState(status: DBusValue, channels: DBusValue?) -> (state: DoctorFacts.Gattd, refusals: [Refusal]) {
        func value(_ key: ControlKey) -> DBusValue? { status.variantDictionaryValue(key.rawValue) }
        var state = DoctorFacts.Gattd(running: true)
        let adapter = value(.adapter)?.asString
        state.adapter = adapter?.isEmpty == false ? adapter : nil
        state.registered = value(.registered)?.asBool
        state.registration = value(.registration)?.asString
        state.advertising = value(.advertising)?.asStringArray ?? []
        state.lastError = value(.lastError)?.asString
        for entry in value(.advertisements)?.unwrappedVariant.dictionaryEntries ?? [] {
            guard let id = entry.key.asString, let words = entry.value.asString else { continue }
            state.advertisements.append((id, words))
        }
        for channel in channels?.asArray ?? [] {
            guard let id = channel.variantDictionaryValue(ControlKey.id.rawValue)?.asString,
                let error = channel.variantDictionaryValue(ControlKey.error.rawValue)?.asString
            else { continue }
            state.channelErrors.append((id, error))
        }
        var refusals: [Refusal] = []
        for entry in value(.refusals)?.asArray ?? [] {
            guard let subject = entry.variantDictionaryValue(ControlKey.subject.rawValue)?.asString
                .flatMap(Refusal.Subject.init(rawValue:)),
                let errorName = entry.variantDictionaryValue(ControlKey.errorName.rawValue)?.asString,
                let message = entry.variantDictionaryValue(ControlKey.message.rawValue)?.asString
            else { continue }
            refusals.append(Refusal(subject: subject, errorName: errorName, message: message))
        }
        return (state, refusals)
    }
}

/// Blocking calls on a private loop, each bounded by `timeout`.
final class Session {
    let loop: EventLoop
    let connection: BusConnection
    let timeout: Duration

    init(loop: EventLoop, connection: BusConnection, timeout: Duration) {
        self.loop = loop
        self.connection = connection
        self.timeout = timeout
    }

    func call(
        _ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = []
    ) -> Result<[DBusValue], DBusError> {
        var answer: Result<[DBusValue], DBusError>?
        let objectPath: ObjectPath
        do throws(DBusError) {
            objectPath = try ObjectPath(path)
        } catch {
            return .failure(error)
        }
        connection.call(
            destination: destination, path: objectPath, interface: interface, member: member,
            arguments: arguments, timeout: timeout
        ) { result in
            switch result {
            case .success(let message):
                do throws(DBusError) {
                    answer = .success(try message.arguments())
                } catch {
                    answer = .failure(error)
                }
            case .failure(let error):
                answer = .failure(error)
            }
        }
        loop.run(until: { answer != nil }, timeout: timeout + .seconds(1))
        return answer ?? .failure(DBusError(name: DBusError.Name.noReply, message: "no answer"))
    }

    func hasOwner(_ name: String) -> Bool {
        if case .success(let arguments) = call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner", [.string(name)]),
            arguments.first?.asBool == true
        {
            return true
        }
        return false
    }

    struct Answer {
        var ok: Bool
        var output: String
        var describe: String
    }

    /// Runs `argv` with no input, for at most two seconds.
    func run(_ argv: [String]) -> Answer {
        var completion: ChildProcess.Completion?
        let child: ChildProcess
        do throws(ChildProcessError) {
            child = try ChildProcess.start(argv: argv, timeout: .seconds(2), loop: loop) { completion = $0 }
        } catch {
            return Answer(ok: false, output: "", describe: "\(error)")
        }
        loop.run(until: { completion != nil }, timeout: .seconds(4))
        guard let completion else {
            child.kill()
            return Answer(ok: false, output: "", describe: "no answer")
        }
        let output = String(decoding: completion.output, as: UTF8.self)
        let firstLine = output.split(separator: "\n").first.map(String.init) ?? ""
        let ok = completion.outcome == .exited(0)
        return Answer(
            ok: ok, output: output,
            describe: ok ? "answered \"\(firstLine)\", not a BlueZ version" : "\(completion.outcome)")
    }
}
