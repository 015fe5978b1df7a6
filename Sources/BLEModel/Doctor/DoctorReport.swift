// SPDX-License-Identifier: MIT

/// What `gattd --doctor` prints: the facts, what D-Bus cannot tell, and the findings; as
/// text for a person (and a bug report) or as JSON for a script.
public struct DoctorReport: Sendable {
    public let facts: DoctorFacts
    public let findings: [DoctorFinding]

    public init(facts: DoctorFacts, table: [KnownProblem] = KnownProblems.table) {
        self.facts = facts
        self.findings = KnownProblems.diagnose(facts, table: table)
    }

    /// True when a finding is a problem (not a note): `--doctor` exits 1.
    public var foundProblem: Bool { findings.contains { $0.severity == .problem } }

    /// What D-Bus does not reveal, said in every report.
    public static let unknowable = [
        "other GATT applications: bluetoothd does not publish who registered applications, so services other "
            + "programs serve are not visible here (a central sees them all)",
        "default agent: bluetoothd does not publish which program is the default agent; if another program "
            + "(bluetoothctl, a desktop applet) holds it, it answers pairing requests instead of gattd",
        "other advertisements: only their number (ActiveInstances), not who holds them",
    ]

    // MARK: Text

    public var text: String {
        var lines = ["gattd --doctor (gattd \(facts.gattdVersion))"]
        if let busError = facts.busError {
            lines.append("system bus: not reachable: \(busError)")
        } else {
            lines += bluetoothdLines + adapterLines + mainConfLines + gattdLines
            lines.append("not visible over D-Bus:")
            lines += Self.unknowable.map { "  \($0)" }
        }
        lines.append("")
        if findings.isEmpty {
            lines.append("no known problem found")
        } else {
            for finding in findings {
                let tag = finding.severity == .problem ? "PROBLEM" : "note"
                let certainty = finding.certainty == .possible ? " (possible)" : ""
                lines.append("\(tag) \(finding.id)\(certainty): \(finding.summary)")
                lines.append("  seen: \(finding.evidence)")
                lines.append("  what to do: \(finding.remedy)")
                if !finding.references.isEmpty { lines.append("  see: \(finding.references.joined(separator: ", "))") }
            }
            let problems = findings.filter { $0.severity == .problem }.count
            lines.append("\(plural(problems, "problem")), \(plural(findings.count - problems, "note"))")
        }
        return lines.joined(separator: "\n")
    }

    var bluetoothdLines: [String] {
        let bluetoothd = facts.bluetoothd
        var version = "bluetoothd: "
        if !bluetoothd.running {
            version += "not running (org.bluez has no owner)"
        } else if let known = bluetoothd.version {
            version += "\(known) (\(bluetoothd.versionNote))"
        } else {
            version += "version unknown (\(bluetoothd.versionNote))"
        }
        var lines = [version]
        if let commandLine = bluetoothd.commandLine { lines.append("  command line: \(commandLine.joined(separator: " "))") }
        return lines + ["kernel: \(facts.kernel?.text ?? "unknown")"]
    }

    var adapterLines: [String] {
        var lines: [String] = []
        if facts.bluetoothd.running && facts.adapters.isEmpty {
            lines.append("adapters: none (\(facts.adaptersNote ?? "no object has org.bluez.Adapter1"))")
        }
        for adapter in facts.adapters {
            lines.append(
                "adapter \(adapter.name)\(adapter.address.map { " (\($0))" } ?? ""): Powered \(word(adapter.powered)), "
                    + "Pairable \(word(adapter.pairable)), Discoverable \(word(adapter.discoverable))")
            guard let manager = adapter.advertising else {
                lines.append("  LEAdvertisingManager1: absent")
                continue
            }
            let own = KnownProblems.ownAdvertisements(adapter, facts)
            let others = KnownProblems.otherAdvertisements(adapter, facts).map(String.init) ?? "unknown"
            lines.append(
                "  advertising: SupportedInstances \(number(manager.supportedInstances)) (free), ActiveInstances "
                    + "\(number(manager.activeInstances)) (gattd's \(own), other programs' \(others))")
            lines.append("  SupportedIncludes: \(list(manager.supportedIncludes))")
            lines.append("  SupportedSecondaryChannels: \(list(manager.supportedSecondaryChannels))")
            if let capabilities = manager.supportedCapabilities {
                var parts: [String] = []
                if let value = capabilities["MaxAdvLen"] { parts.append("MaxAdvLen \(value)") }
                if let value = capabilities["MaxScnRspLen"] { parts.append("MaxScnRspLen \(value)") }
                if let low = capabilities["MinTxPower"], let high = capabilities["MaxTxPower"] {
                    parts.append("Tx power \(low)...\(high) dBm")
                }
                lines.append("  SupportedCapabilities: \(parts.isEmpty ? "(empty)" : parts.joined(separator: ", "))")
            } else {
                lines.append("  SupportedCapabilities: not offered (5.66 without experimental features)")
            }
            lines.append("  SupportedFeatures: \(list(manager.supportedFeatures))")
        }
        return lines
    }

    var mainConfLines: [String] {
        let conf = facts.mainConf
        guard let settings = conf.settings else {
            let reason = conf.unreadableReason ?? "unknown reason"
            let hint = reason.includes("Permission denied") ? " (run --doctor as root to read it)" : ""
            return ["main.conf (\(conf.path), \(conf.origin)): not read: \(reason); its settings are unknown\(hint)"]
        }
        var lines = ["main.conf (\(conf.path), \(conf.origin)):"]
        for setting in settings {
            let value = setting.value.map { "= \($0)" } ?? "not set (default \(setting.defaultValue))"
            lines.append("  [\(setting.section)] \(setting.key) \(value)")
            if setting.section == "GATT", setting.key == "Channels" {
                lines.append("    for phones: \(channelsForPhones)")
            }
        }
        return lines
    }

    /// What `[GATT] Channels` means for phones on the bluetoothd found.
    var channelsForPhones: String {
        MainConfSettings.channelsForPhones(facts.mainConf.value("GATT", "Channels"), version: facts.bluetoothd.version)
    }

    var gattdLines: [String] {
        let gattd = facts.gattd
        guard gattd.running else { return ["gattd: not running (\(gattd.note ?? "org.gattd has no owner"))"] }
        var lines = ["gattd: running, \(gattd.registration ?? "registration unknown")"]
        if let note = gattd.note { lines.append("  \(note)") }
        for entry in gattd.advertisements { lines.append("  advertisement \(entry.id): \(entry.state)") }
        lines.append("  last refusal: \(gattd.lastError.flatMap { $0.isEmpty ? nil : $0 } ?? "none")")
        return lines
    }

    func word(_ value: Bool?) -> String { value.map { $0 ? "yes" : "no" } ?? "unknown" }
    func number(_ value: Int?) -> String { value.map(String.init) ?? "unknown" }
    func list(_ value: [String]?) -> String {
        guard let value else { return "not offered" }
        return value.isEmpty ? "(none)" : value.joined(separator: ", ")
    }
}
