// SPDX-License-Identifier: MIT

import Control
import ControlAPI

/// gattd's command line. Hand-parsed: the daemon has six options, and leaving out an
/// argument-parsing library keeps Foundation out of a binary whose memory counts on a
/// small board (gattctl, an interactive tool, uses swift-argument-parser).
struct GattdOptions: Equatable {
    var config: String?
    var adapter: String?
    var instance: String?
    var stateDir: String?
    var logLevel = "info"
    var check = false
    var doctor = false
    var json = false
    var mainConf: String?
    var help = false
    var version = false

    struct UsageError: Error, Equatable {
        let message: String
    }

    static let usage = """
        usage: gattd [--instance NAME] [--config FILE] [--adapter hciN] [--state-dir DIR] [--log-level LEVEL]
               gattd --check [--instance NAME] [--config FILE]
               gattd --doctor [--instance NAME] [--json] [--main-conf FILE]

        Bluetooth LE peripheral daemon: serves a JSON-defined GATT application and its
        advertisements through BlueZ (bluetoothd) on the D-Bus system bus.

        options:
          --config FILE      the service definition (default: $CONFIGURATION_DIRECTORY/gattd.json,
                             else /etc/gattd/gattd.json; NAME.json with --instance)
          --adapter hciN     adapter to use (overrides the configuration's "adapter")
          --instance NAME    one gattd of several (gattd@NAME.service, one per radio): the
                             control API's bus name is org.gattd.NAME, the default definition
                             NAME.json; with --doctor, ask that gattd
          --state-dir DIR    directory for state.json (default: $STATE_DIRECTORY, which wins,
                             else /var/lib/gattd)
          --log-level LEVEL  trace, debug, info, notice, warning, error or critical (default info)
          --check            validate the configuration, print a summary and the advertising
                             byte budget, and exit
          --doctor           read bluetoothd's version, the kernel, the adapters, main.conf and
                             gattd's state (changing nothing), match known bad combinations,
                             print what was found and what to do, and exit (1 when a problem is found)
          --json             with --doctor: one JSON object instead of text
          --main-conf FILE   with --doctor: bluetoothd's configuration (default: the file
                             bluetoothd was started with, -f, else /etc/bluetooth/main.conf)
          --version          print the version and exit
          -h, --help         print this help and exit

        exit status: 0 after a clean stop, 1 when the system bus cannot be reached,
        64 for bad command-line usage, 78 (EX_CONFIG) when the configuration is invalid;
        --doctor: 0 when no problem was found, 1 when one was.
        """

    /// Parses `arguments` (without the program name). `--name value` and `--name=value`
    /// are both accepted.
    static func parse(_ arguments: [String]) throws(UsageError) -> GattdOptions {
        var options = GattdOptions()
        var index = 0
        while index < arguments.count {
            var argument = arguments[index]
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                inlineValue = String(argument[argument.index(after: equals)...])
                argument = String(argument[..<equals])
            }
            func value() throws(UsageError) -> String {
                if let inlineValue { return inlineValue }
                index += 1
                guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                    throw UsageError(message: "\(argument) needs a value")
                }
                return arguments[index]
            }
            func noValue() throws(UsageError) {
                if inlineValue != nil { throw UsageError(message: "\(argument) takes no value") }
            }
            switch argument {
            case "--config": options.config = try value()
            case "--adapter": options.adapter = try value()
            case "--instance":
                let name = try value()
                guard ControlNames.isValidInstance(name) else {
                    throw UsageError(
                        message: "--instance \"\(name)\": letters, digits and _ only, not starting with a digit (org.gattd.NAME)")
                }
                options.instance = name
            case "--state-dir": options.stateDir = try value()
            case "--log-level": options.logLevel = try value()
            case "--check": try noValue(); options.check = true
            case "--doctor": try noValue(); options.doctor = true
            case "--json": try noValue(); options.json = true
            case "--main-conf": options.mainConf = try value()
            case "--version": try noValue(); options.version = true
            case "-h", "--help": try noValue(); options.help = true
            default:
                throw UsageError(message: "unknown argument \"\(argument)\"")
            }
            index += 1
        }
        if (options.json || options.mainConf != nil) && !options.doctor {
            throw UsageError(message: "--json and --main-conf go with --doctor")
        }
        if options.doctor && options.check { throw UsageError(message: "--doctor and --check exclude each other") }
        return options
    }
}
