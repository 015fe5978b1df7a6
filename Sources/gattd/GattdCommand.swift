// SPDX-License-Identifier: MIT

import ArgumentParser
import BLEModel
import DaemonCore
import Glibc

/// `gattd`: serve a JSON-defined GATT application to BlueZ.
struct GattdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gattd",
        abstract: "Bluetooth LE peripheral daemon: serves a JSON-defined GATT application through BlueZ.",
        discussion: """
            Exit status: 0 after a clean stop, 1 when the system bus cannot be reached, \
            64 for bad command-line usage, 78 (EX_CONFIG) when the configuration is invalid.
            """)

    @Option(name: .long, help: "The service definition (default: $CONFIGURATION_DIRECTORY/gattd.json, else /etc/gattd/gattd.json).")
    var config: String?

    @Option(name: .long, help: "Adapter to use, e.g. hci0 (overrides the configuration's \"adapter\").")
    var adapter: String?

    @Option(name: .long, help: "Directory for state.json (default: $STATE_DIRECTORY, else /var/lib/gattd; $STATE_DIRECTORY wins).")
    var stateDir: String?

    @Flag(name: .long, help: "Validate the configuration, print a summary and exit.")
    var check = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func run() throws {
        let path = config ?? defaultConfigPath()
        let loaded: LoadedConfiguration
        switch ConfigurationLoader.load(path: path) {
        case .success(let result):
            loaded = result
        case .failure(let errors):
            for issue in errors.issues { printError("\(path): \(issue)") }
            let count = errors.issues.filter { $0.severity == .error }.count
            printError("\(path): \(count) error\(count == 1 ? "" : "s"); nothing was started")
            throw ExitCode(78)
        }
        for warning in loaded.warnings { printError("\(path): \(warning)") }
        if check {
            print(CheckReport(path: path, configuration: loaded.configuration).text)
            return
        }
        guard let level = parseLogLevel(logLevel) else {
            throw ValidationError("unknown log level \"\(logLevel)\"")
        }
        let code = Daemon.run(
            configuration: loaded.configuration, configPath: path, adapter: adapter ?? loaded.configuration.adapter,
            stateDirectory: StateStore.resolveDirectory(
                environment: getenv("STATE_DIRECTORY").map { String(cString: $0) }, option: stateDir),
            logLevel: level)
        if code != 0 { throw ExitCode(code) }
    }
}

func defaultConfigPath() -> String {
    if let directory = getenv("CONFIGURATION_DIRECTORY").map({ String(cString: $0) }), !directory.isEmpty {
        // systemd may pass several directories separated by ':'; ours is the first.
        let first = directory.split(separator: ":").first.map(String.init) ?? directory
        return first + "/gattd.json"
    }
    return "/etc/gattd/gattd.json"
}

func printError(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(0x0A)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
