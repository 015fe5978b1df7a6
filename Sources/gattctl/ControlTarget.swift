// SPDX-License-Identifier: MIT

import ControlAPI

/// Which gattd gattctl talks to: `--instance NAME` anywhere before a lone `--` selects
/// `gattd@NAME` (bus name `org.gattd.NAME`) for every subcommand; taken out of the
/// arguments before ArgumentParser sees them, so each subcommand needs no option of its own.
struct ControlTarget: Sendable {
    let busName: String
    let arguments: [String]

    /// The target of this process's command line.
    static let current: Result<ControlTarget, Failure> = parse(Array(CommandLine.arguments.dropFirst()))

    static func parse(_ arguments: [String]) -> Result<ControlTarget, Failure> {
        var rest: [String] = []
        var instance: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" {
                rest.append(contentsOf: arguments[index...])
                break
            }
            if argument == "--instance" || argument.hasPrefix("--instance=") {
                let name: String
                if argument == "--instance" {
                    index += 1
                    guard index < arguments.count else { return .failure(Failure(.usage, "--instance needs a name")) }
                    name = arguments[index]
                } else {
                    name = String(argument.dropFirst("--instance=".count))
                }
                guard ControlNames.isValidInstance(name) else {
                    return .failure(
                        Failure(.usage, "--instance \"\(name)\": letters, digits and _ only, not starting with a digit"))
                }
                instance = name
            } else {
                rest.append(argument)
            }
            index += 1
        }
        return .success(ControlTarget(busName: ControlNames.busName(instance: instance), arguments: rest))
    }

    /// The bus name to call; `org.gattd` when the command line could not be read (the
    /// usage error is reported before any call).
    static var busName: String { (try? current.get())?.busName ?? ControlNames.busName }
}
