// SPDX-License-Identifier: MIT

import BLEModel
import ControlAPI
import DaemonCore
import Doctor
import Glibc
import SystemdKit

/// `gattd`: serve a JSON-defined GATT application to BlueZ.
struct GattdCommand {
    let options: GattdOptions

    static func main() -> Never {
        StandardDescriptors.ensureOpen()
        let options: GattdOptions
        do throws(GattdOptions.UsageError) {
            options = try GattdOptions.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            printError("gattd: \(error.message)")
            printError(GattdOptions.usage)
            exit(64)
        }
        if options.help {
            print(GattdOptions.usage)
            exit(0)
        }
        if options.version {
            print("gattd \(gattdVersion)")
            exit(0)
        }
        if options.doctor { exit(doctor(options)) }
        exit(GattdCommand(options: options).run())
    }

    /// `--doctor`: read, match, print; 1 when a problem was found.
    static func doctor(_ options: GattdOptions) -> Int32 {
        var probe = DoctorProbe(
            mainConfPath: options.mainConf, environment: LoggingBootstrap.processEnvironment())
        probe.controlBusName = ControlNames.busName(instance: options.instance)
        let report = DoctorReport(facts: probe.run())
        print(options.json ? report.json : report.text)
        return report.foundProblem ? 1 : 0
    }

    func run() -> Int32 {
        let path = options.config ?? defaultConfigPath(instance: options.instance)
        let loaded: LoadedConfiguration
        switch ConfigurationFile.load(path: path) {
        case .success(let result):
            loaded = result
        case .failure(let errors):
            for issue in errors.issues { printError(issue.located(in: path)) }
            let count = errors.issues.filter { $0.severity == .error }.count
            printError("\(path): \(count) error\(count == 1 ? "" : "s"); nothing was started")
            return 78
        }
        let configuration = loaded.configuration
        // What the unit's sandbox hides is for --check: a gattd started otherwise (by hand, in
        // tests) sees other paths, and a hook that cannot start is logged when it is run.
        let sandbox = options.check ? ServiceSandbox.warnings(for: configuration) : []
        for warning in loaded.warnings + sandbox + configuration.discoveryWarnings {
            printError(warning.located(in: path))
        }
        if options.check {
            print(CheckReport(path: path, configuration: loaded.configuration).text)
            return 0
        }
        guard let level = parseLogLevel(options.logLevel) else {
            printError("gattd: unknown log level \"\(options.logLevel)\"")
            return 64
        }
        let code = Daemon.run(
            configuration: loaded.configuration, configPath: path, adapter: options.adapter ?? loaded.configuration.adapter,
            stateDirectory: StateStore.resolveDirectory(
                environment: getenv("STATE_DIRECTORY").map { String(cString: $0) }, option: options.stateDir),
            logLevel: level, controlBusName: ControlNames.busName(instance: options.instance))
        return code
    }
}

/// `gattd.json` (an instance's: `NAME.json`) in $CONFIGURATION_DIRECTORY, else in /etc/gattd.
func defaultConfigPath(instance: String? = nil) -> String {
    let file = (instance ?? "gattd") + ".json"
    if let directory = getenv("CONFIGURATION_DIRECTORY").map({ String(cString: $0) }), !directory.isEmpty {
        // systemd may pass several directories separated by ':'; ours is the first.
        let first = directory.split(separator: ":").first.map(String.init) ?? directory
        return first + "/" + file
    }
    return "/etc/gattd/" + file
}

func printError(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(0x0A)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
