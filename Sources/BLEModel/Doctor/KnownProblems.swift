// SPDX-License-Identifier: MIT

/// One known bad combination of bluetoothd, kernel, controller and settings that a
/// peripheral meets: when it applies, what it does, what to do. Kept in
/// `KnownProblems.table`, the only list: `gattd --doctor` matches it against what it reads,
/// and the daemon against each refusal by bluetoothd (docs/known-problems.md).
public struct KnownProblem: Sendable {
    public enum Severity: String, Sendable {
        /// Something fails: `--doctor` exits 1.
        case problem
        /// Works, but not as the configuration may expect.
        case note
    }

    /// What bluetoothd answers when the problem strikes a registration.
    public struct RefusalPattern: Sendable {
        public var subject: Refusal.Subject
        /// The D-Bus error name (`org.bluez.Error.Failed`).
        public var errorName: String
        /// bluetoothd's message, exactly (`Failed to register advertisement`).
        public var message: String

        public init(subject: Refusal.Subject, errorName: String, message: String) {
            self.subject = subject
            self.errorName = errorName
            self.message = message
        }

        /// True when `refusal` is this answer: the same subject and error name, and the
        /// message among bluetoothd's words (the daemon's own refusal, or one read back from
        /// gattd's status, `Refusals`, both as bluetoothd gave them).
        public func matches(_ refusal: Refusal) -> Bool {
            refusal.subject == subject && refusal.errorName == errorName && refusal.message.includes(message)
        }
    }

    /// A short stable name (`ext-adv-data-length`), used in logs and `--json`.
    public var id: String
    public var severity: Severity
    /// One line: what happens.
    public var summary: String
    /// What to do about it.
    public var remedy: String
    /// Where it is described (BlueZ issues, commits).
    public var references: [String]
    /// The bluetoothd releases that have it.
    public var bluetoothd: ClosedRange<BlueZVersion>
    /// The kernel releases (`major.minor.patch`) known to trigger it; nil: any kernel.
    public var kernels: [String]?
    /// bluetoothd's answer when it refuses a registration because of it; nil when it
    /// refuses nothing.
    public var refusal: RefusalPattern?
    /// A further condition on what `--doctor` read (an adapter property, a main.conf
    /// setting): the evidence in words when it holds, nil when it does not. nil: none.
    public var condition: (@Sendable (DoctorFacts) -> String?)?

    public init(
        id: String, severity: Severity, summary: String, remedy: String, references: [String],
        bluetoothd: ClosedRange<BlueZVersion>, kernels: [String]? = nil, refusal: RefusalPattern? = nil,
        condition: (@Sendable (DoctorFacts) -> String?)? = nil
    ) {
        self.id = id
        self.severity = severity
        self.summary = summary
        self.remedy = remedy
        self.references = references
        self.bluetoothd = bluetoothd
        self.kernels = kernels
        self.refusal = refusal
        self.condition = condition
    }

    /// True when `kernel` is one of `kernels` (or the row names none).
    func kernelMatches(_ kernel: KernelRelease) -> Bool {
        guard let kernels else { return true }
        return kernels.contains { kernel.isVersion($0) }
    }
}

public enum KnownProblems {
    static let anyBlueZ = BlueZVersion(5, 0)...BlueZVersion(5, 999)

    /// The table. To add a case: a row here with the versions (and kernels) it applies to,
    /// bluetoothd's exact refusal when it refuses something, a condition on the facts when
    /// it needs one, a remedy; then the stand-in's emulation and a test
    /// (docs/known-problems.md).
    public static let table: [KnownProblem] = [
        KnownProblem(
            id: "ext-adv-data-length", severity: .problem,
            summary: "the kernel refuses every advertisement bluetoothd submits: bluetoothd up to 5.86 sends "
                + "MGMT Add Extended Advertising Data with extra bytes, which these kernels reject (Invalid Parameters)",
            remedy: "upgrade bluetoothd to 5.87 or later (or a build with BlueZ commit 2a6968b40), or boot a kernel "
                + "with the check relaxed again (Linux \"Bluetooth: MGMT: Fix backward compatibility with "
                + "userspace\"; on Raspberry Pi 6.18.37 works) or one from before it (6.12.87 worked; Debian 13's "
                + "6.12.117 does not have the check: 5.82 and 5.87 advertise on it); "
                + "nothing in gattd's configuration avoids it",
            references: ["bluez/bluez#2268", "bluez/bluez#2269", "raspberrypi/linux#7473", "BlueZ commit 2a6968b40"],
            bluetoothd: BlueZVersion(5, 56)...BlueZVersion(5, 86), kernels: ["6.12.93", "6.18.34"],
            refusal: .init(
                subject: .advertisement, errorName: "org.bluez.Error.Failed", message: "Failed to register advertisement")),
        KnownProblem(
            id: "gatt-handle-required", severity: .problem,
            summary: "bluetoothd 5.74 and 5.75 refuse a GATT application whose characteristics leave Handle to "
                + "bluetoothd (\"Failed to create entry in database\"); gattd never sets Handle",
            remedy: "upgrade bluetoothd to 5.76 or later, or install your distribution's update carrying BlueZ "
                + "commit f34cc1da5; 5.73 and earlier are not affected",
            references: ["bluez/bluez#821", "BlueZ commits 7604a577c, f34cc1da5"],
            bluetoothd: BlueZVersion(5, 74)...BlueZVersion(5, 75),
            refusal: .init(
                subject: .application, errorName: "org.bluez.Error.Failed", message: "Failed to create entry in database")),
        KnownProblem(
            id: "adv-update-failure", severity: .note,
            summary: "bluetoothd up to 5.73 drops an advertisement, and can crash, when the controller refuses an "
                + "in-place update of its data (gattctl advertise set, SetAdvertisementData, a reload that changes "
                + "advertising data)",
            remedy: "upgrade bluetoothd to 5.74 or later, or change advertising data by switching the advertisement "
                + "off and on (gattctl advertise off/on) instead of in place",
            references: ["BlueZ commit 6b5447583"],
            bluetoothd: BlueZVersion(5, 56)...BlueZVersion(5, 73)),
        KnownProblem(
            id: "adv-capabilities-experimental", severity: .note,
            summary: "bluetoothd offers no SupportedCapabilities: it ignores an advertisement's minInterval, "
                + "maxInterval and txPower (they are experimental before 5.77)",
            remedy: "set Experimental = true in main.conf's [General] section (or start bluetoothd with -E), or "
                + "upgrade to 5.77 or later; gattd logs the same when it registers such an advertisement",
            references: ["BlueZ commit 7e028287a"],
            bluetoothd: BlueZVersion(5, 0)...BlueZVersion(5, 76),
            condition: { facts in
                let names = facts.adapters.filter { $0.advertising != nil && $0.advertising?.supportedCapabilities == nil }
                    .map(\.name)
                return names.isEmpty ? nil : "no SupportedCapabilities on \(names.joined(separator: ", "))"
            }),
        KnownProblem(
            id: "controller-mode-bredr", severity: .problem,
            summary: "main.conf's ControllerMode = bredr switches LE off: nothing can advertise or be connected over LE",
            remedy: "set ControllerMode = dual (or le) in main.conf's [General] section and restart bluetoothd",
            references: ["BlueZ src/main.conf"],
            bluetoothd: anyBlueZ,
            condition: { facts in
                facts.mainConf.value("General", "ControllerMode")?.lowercased() == "bredr"
                    ? "ControllerMode = bredr in \(facts.mainConf.path)" : nil
            }),
    ]

    /// A row that matches a refusal, and whether what tells it apart was checked.
    public struct Match: Sendable {
        public var problem: KnownProblem
        /// True when the kernel (for a row that names kernels) or bluetoothd's version
        /// confirmed it; false when only bluetoothd's answer matched, which it gives for
        /// other causes too (the daemon, which does not know bluetoothd's version).
        public var certain: Bool
    }

    /// The known problem behind `refusal`, if one matches: the refusal is the row's, the
    /// kernel (when the row names kernels) is one of them, and bluetoothd's version, when
    /// known, is in the row's range. The daemon calls this with no version (under its
    /// systemd unit it cannot see bluetoothd's process); `--doctor` passes what it found.
    public static func cause(
        of refusal: Refusal, kernel: KernelRelease?, bluetoothd: BlueZVersion?, table: [KnownProblem] = table
    ) -> Match? {
        for row in table {
            guard let pattern = row.refusal, pattern.matches(refusal) else { continue }
            if let bluetoothd, !row.bluetoothd.contains(bluetoothd) { continue }
            if row.kernels != nil {
                guard let kernel, row.kernelMatches(kernel) else { continue }
            }
            return Match(problem: row, certain: bluetoothd != nil || row.kernels != nil)
        }
        return nil
    }

    /// The words the daemon appends to a refusal that matches a row: `known problem ID:
    /// ...`, or `possibly known problem ID (only with bluetoothd A-B; gattd --doctor
    /// checks): ...` when the version that tells it apart is unknown.
    public static func explanation(_ match: Match) -> String {
        let problem = match.problem
        let range = problem.bluetoothd
        let versions = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
        let name =
            match.certain
            ? "known problem \(problem.id)"
            : "possibly known problem \(problem.id) (only with bluetoothd \(versions); gattd --doctor checks)"
        return "\(name): \(problem.summary); what to do: \(problem.remedy) (\(problem.references.joined(separator: ", ")))"
    }
}
