// SPDX-License-Identifier: MIT

/// One thing `gattd --doctor` found: a row of `KnownProblems.table` that matches, or a
/// plain fact that stops a peripheral (no bluetoothd, no adapter, adapter off, a refusal).
public struct DoctorFinding: Sendable, Equatable {
    public enum Certainty: String, Sendable {
        /// Every condition of the row was checked and holds.
        case certain
        /// Some condition could not be checked (bluetoothd's version unknown, a kernel not
        /// among those reported); the evidence says which.
        case possible
    }

    public var id: String
    public var severity: KnownProblem.Severity
    public var certainty: Certainty
    public var summary: String
    /// What was seen that matches.
    public var evidence: String
    public var remedy: String
    public var references: [String]
}

extension KnownProblems {
    /// Matches the table, then the plain facts, against what `--doctor` read.
    public static func diagnose(_ facts: DoctorFacts, table: [KnownProblem] = table) -> [DoctorFinding] {
        if let busError = facts.busError {
            return [
                DoctorFinding(
                    id: "system-bus", severity: .problem, certainty: .certain,
                    summary: "the D-Bus system bus cannot be reached", evidence: busError,
                    remedy: "start dbus (systemctl start dbus) and check DBUS_SYSTEM_BUS_ADDRESS", references: [])
            ]
        }
        var findings = table.compactMap { match($0, facts) }
        findings += plainFindings(facts, matched: findings, table: table)
        findings += channelFindings(facts)
        return findings
    }

    static func match(_ row: KnownProblem, _ facts: DoctorFacts) -> DoctorFinding? {
        let version = facts.bluetoothd.version
        if let version, !row.bluetoothd.contains(version) { return nil }
        var evidence: [String] = []
        var certain = true
        if let version {
            evidence.append("bluetoothd \(version)")
        } else {
            certain = false
            evidence.append("bluetoothd's version is unknown (\(facts.bluetoothd.versionNote))")
        }
        let refused = row.refusal.flatMap { pattern in facts.refusals.first { pattern.matches($0) } }
        var kernelListed = false
        if let kernels = row.kernels {
            if let kernel = facts.kernel, row.kernelMatches(kernel) {
                kernelListed = true
                evidence.append("kernel \(kernel)")
            } else if refused != nil, version != nil {
                certain = false
                evidence.append(
                    "kernel \(facts.kernel?.text ?? "unknown") is not among those reported (\(kernels.joined(separator: ", "))) "
                        + "but bluetoothd refused gattd with the same answer")
            } else {
                return nil
            }
        }
        if let condition = row.condition {
            guard let seen = condition(facts) else { return nil }
            evidence.append(seen)
        }
        if let refused { evidence.append("gattd was refused: \"\(refused.message)\"") }
        // Without the version, a row needs something else seen to be worth naming.
        if version == nil && refused == nil && !kernelListed && row.condition == nil { return nil }
        return DoctorFinding(
            id: row.id, severity: row.severity, certainty: certain ? .certain : .possible, summary: row.summary,
            evidence: evidence.joined(separator: "; "), remedy: row.remedy, references: row.references)
    }

    /// A channel of the running gattd that does not listen: phones find no PSM for it.
    static func channelFindings(_ facts: DoctorFacts) -> [DoctorFinding] {
        facts.gattd.channelErrors.map { channel in
            let sandbox = channel.error.contains("errno 97)") || channel.error.contains("errno 1)")
                || channel.error.contains("errno 13)")
            return DoctorFinding(
                id: "channel-not-listening", severity: .problem, certainty: .certain,
                summary: "channel \(channel.id) does not listen: centrals cannot open it and no PSM characteristic "
                    + "is served for it",
                evidence: channel.error,
                remedy: sandbox
                    ? "the kernel makes Bluetooth sockets only in the host's network namespace: install "
                        + "/usr/share/doc/gattd/systemd/channels.conf as /etc/systemd/system/gattd.service.d/channels.conf, "
                        + "then systemctl daemon-reload && systemctl restart gattd (docs/channels.md)"
                    : "see docs/channels.md", references: ["docs/channels.md"])
        }
    }

    static func plainFindings(_ facts: DoctorFacts, matched: [DoctorFinding], table: [KnownProblem]) -> [DoctorFinding] {
        func problem(_ id: String, _ summary: String, _ evidence: String, _ remedy: String) -> DoctorFinding {
            DoctorFinding(
                id: id, severity: .problem, certainty: .certain, summary: summary, evidence: evidence, remedy: remedy,
                references: [])
        }
        guard facts.bluetoothd.running else {
            return [
                problem(
                    "bluetoothd-not-running", "bluetoothd is not running: nobody owns org.bluez on the system bus",
                    "org.bluez has no owner", "start it (systemctl start bluetooth) and look at its log")
            ]
        }
        var findings: [DoctorFinding] = []
        if facts.adapters.isEmpty {
            findings.append(
                problem(
                    "no-adapter", "bluetoothd offers no adapter", facts.adaptersNote ?? "no object has org.bluez.Adapter1",
                    "check that the controller is attached and not blocked (rfkill list; dmesg | grep -i bluetooth)"))
        }
        // An adapter that is off matters when gattd uses it, or when gattd uses none and
        // none is on; another adapter being off is only noted.
        let anyPowered = facts.adapters.contains { $0.powered == true }
        for adapter in facts.adapters {
            if adapter.powered == false {
                var finding = problem(
                    "adapter-off", "adapter \(adapter.name) is powered off: it cannot advertise or accept connections",
                    "\(adapter.name) Powered = false",
                    "bluetoothctl power on (and AutoEnable = true in main.conf's [Policy]); check rfkill list")
                if facts.gattd.adapter != adapter.name && (facts.gattd.adapter != nil || anyPowered) {
                    finding.severity = .note
                }
                findings.append(finding)
            }
            if adapter.advertising == nil {
                findings.append(
                    DoctorFinding(
                        id: "no-advertising-manager", severity: .note, certainty: .certain,
                        summary: "adapter \(adapter.name) offers no LEAdvertisingManager1: gattd cannot advertise on it",
                        evidence: "no org.bluez.LEAdvertisingManager1 on \(adapter.name)",
                        remedy: "use an LE-capable adapter, powered on, with ControllerMode dual or le", references: []))
            }
            if let others = otherAdvertisements(adapter, facts), others > 0 {
                findings.append(
                    DoctorFinding(
                        id: "advertisements-held-by-others", severity: .note, certainty: .certain,
                        summary: "another program holds \(plural(others, "advertising instance")) on \(adapter.name)",
                        evidence: "ActiveInstances \(adapter.advertising?.activeInstances ?? 0), gattd's own "
                            + "\(ownAdvertisements(adapter, facts))",
                        remedy: "each instance it holds is one gattd cannot use; stop that program's advertising if "
                            + "gattd's advertisements are refused for want of one", references: []))
            }
        }
        let explained = Set(matched.map(\.id))
        for refusal in facts.refusals
        where !table.contains(where: { explained.contains($0.id) && $0.refusal?.matches(refusal) == true }) {
            findings.append(
                problem(
                    "gattd-refused", "bluetoothd refused gattd's \(refusal.subject.rawValue)",
                    "\(refusal.errorName): \(refusal.message)",
                    "look at bluetoothd's log (journalctl -u bluetooth) around the refusal; no known problem matches"))
        }
        return findings
    }

    /// gattd's advertisements on air on `adapter` (0 when gattd serves another one).
    static func ownAdvertisements(_ adapter: DoctorFacts.Adapter, _ facts: DoctorFacts) -> Int {
        facts.gattd.adapter == adapter.name ? facts.gattd.advertising.count : 0
    }

    /// `ActiveInstances` beyond gattd's own; nil when unknown.
    static func otherAdvertisements(_ adapter: DoctorFacts.Adapter, _ facts: DoctorFacts) -> Int? {
        guard let active = adapter.advertising?.activeInstances else { return nil }
        return max(0, active - ownAdvertisements(adapter, facts))
    }
}
