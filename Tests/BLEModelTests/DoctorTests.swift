// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("gattd --doctor: versions, main.conf, the known-problem table, the report")
struct DoctorTests {
    static func facts(
        version: BlueZVersion? = BlueZVersion(5, 82), kernel: String? = "6.1.0-28-amd64",
        capabilities: [String: Int]? = ["MaxAdvLen": 31], active: Int = 0, gattdAdvertising: [String] = [],
        refusals: [Refusal] = [], mainConf: String? = ""
    ) -> DoctorFacts {
        var adapter = DoctorFacts.Adapter(name: "hci0")
        adapter.powered = true
        adapter.pairable = false
        var manager = DoctorFacts.AdvertisingManager()
        manager.activeInstances = active
        manager.supportedInstances = 5 - active
        manager.supportedCapabilities = capabilities
        adapter.advertising = manager
        var gattd = DoctorFacts.Gattd(running: true)
        gattd.adapter = "hci0"
        gattd.advertising = gattdAdvertising
        return DoctorFacts(
            gattdVersion: "test",
            bluetoothd: .init(running: true, pid: 7, version: version, versionNote: "test"),
            kernel: kernel.map(KernelRelease.init), adapters: [adapter],
            mainConf: .init(path: "/m", settings: mainConf.map(MainConfSettings.read)), gattd: gattd,
            refusals: refusals)
    }

    static let advertisementRefusal = Refusal(
        subject: .advertisement, errorName: "org.bluez.Error.Failed", message: "Failed to register advertisement")
    static let applicationRefusal = Refusal(
        subject: .application, errorName: "org.bluez.Error.Failed", message: "Failed to create entry in database")

    @Test("bluetoothd --version parses; an interpreter's answer does not")
    func versions() {
        #expect(BlueZVersion(parsing: "5.82\n") == BlueZVersion(5, 82))
        #expect(BlueZVersion(parsing: " 5.66 \r\n") == BlueZVersion(5, 66))
        #expect(BlueZVersion(parsing: "Python 3.11.2") == nil)
        #expect(BlueZVersion(parsing: "5.82.1") == nil)
        #expect(BlueZVersion(parsing: "") == nil)
        #expect(BlueZVersion(5, 9) < BlueZVersion(5, 66))
    }

    @Test("kernel releases match by their numbers only")
    func kernels() {
        #expect(KernelRelease("6.12.93+rpt-rpi-v8").numbers == [6, 12, 93])
        #expect(KernelRelease("6.12.93+rpt-rpi-v8").isVersion("6.12.93"))
        #expect(KernelRelease("6.12.93-1").isVersion("6.12.93"))
        #expect(!KernelRelease("6.12.930").isVersion("6.12.93"))
        #expect(!KernelRelease("6.12.9").isVersion("6.12.93"))
        #expect(KernelRelease("").numbers.isEmpty)
    }

    @Test("main.conf: sections, comments and spaces; unset keys stay nil")
    func mainConf() {
        let settings = MainConfSettings.read(
            "[General]\n# Experimental = true\n  Privacy=device \n[GATT]\nKeySize = 16\r\nSecurity = low\n[Policy]\nKeySize = 7\n")
        func value(_ section: String, _ key: String) -> String?? {
            settings.first { $0.section == section && $0.key == key }.map(\.value)
        }
        #expect(value("General", "Experimental") == .some(nil))
        #expect(value("General", "Privacy") == "device")
        #expect(value("GATT", "KeySize") == "16")
        #expect(value("GATT", "ExchangeMTU") == .some(nil))
        #expect(value("GATT", "Security") == "low")
        #expect(settings.count == 10)
    }

    @Test("what Channels means for phones depends on bluetoothd's version")
    func channelsForPhones() {
        let v566 = BlueZVersion(5, 66)
        let v582 = BlueZVersion(5, 82)
        // Unset: 5.66's default is 3 (EATT, opened by bluetoothd itself), 5.67's is 1.
        #expect(MainConfSettings.channelsForPhones(nil, version: v566).hasPrefix("up to 2 EATT bearers per phone"))
        #expect(MainConfSettings.channelsForPhones(nil, version: v566).contains("opens them itself"))
        #expect(MainConfSettings.channelsForPhones(nil, version: v582).hasPrefix("ATT only"))
        #expect(MainConfSettings.channelsForPhones("1", version: v566).hasPrefix("ATT only"))
        let set582 = MainConfSettings.channelsForPhones("2", version: v582)
        #expect(set582.hasPrefix("up to 1 EATT bearer per phone"))
        #expect(set582.contains("only the phone opens them") && !set582.contains("itself"))
        #expect(MainConfSettings.channelsForPhones(nil, version: nil).contains("unknown"))
        #expect(MainConfSettings.channelsForPhones("3", version: nil).contains("up to 5.66"))
        #expect(MainConfSettings.channelsForPhones("x", version: v582).contains("not a number"))
        let report = DoctorReport(facts: Self.facts(version: v566, mainConf: "[GATT]\n#Channels = 1\n"))
        #expect(report.text.contains("  [GATT] Channels not set (default 3 in 5.66, 1 in 5.82 and 5.87)\n"
            + "    for phones: up to 2 EATT bearers per phone"))
    }

    @Test("every row has a unique id, a remedy and a reference")
    func tableIsWellFormed() {
        let ids = KnownProblems.table.map(\.id)
        #expect(Set(ids).count == ids.count)
        for row in KnownProblems.table {
            #expect(!row.remedy.isEmpty && !row.summary.isEmpty && !row.references.isEmpty, "\(row.id)")
        }
    }

    @Test("a refusal names its cause only when kernel and version allow it")
    func causeOfRefusal() {
        let pi = KernelRelease("6.12.93+rpt-rpi-v8")
        let other = KernelRelease("6.1.0-28-amd64")
        func cause(_ refusal: Refusal, _ kernel: KernelRelease?, _ version: BlueZVersion?) -> (String, Bool)? {
            KnownProblems.cause(of: refusal, kernel: kernel, bluetoothd: version).map { ($0.problem.id, $0.certain) }
        }
        // The kernel tells the advertising bug apart, with or without the version.
        #expect(cause(Self.advertisementRefusal, pi, nil)! == ("ext-adv-data-length", true))
        #expect(
            cause(Self.advertisementRefusal, KernelRelease("6.18.34+rpt-rpi-2712"), BlueZVersion(5, 82))! == (
                "ext-adv-data-length", true
            ))
        #expect(cause(Self.advertisementRefusal, pi, BlueZVersion(5, 87)) == nil)
        #expect(cause(Self.advertisementRefusal, other, nil) == nil)
        #expect(cause(Self.advertisementRefusal, nil, nil) == nil)
        var parse = Self.advertisementRefusal
        parse.message = "Failed to parse advertisement."
        #expect(cause(parse, pi, nil) == nil)
        var wrongName = Self.advertisementRefusal
        wrongName.errorName = "org.bluez.Error.NotPermitted"
        #expect(cause(wrongName, pi, nil) == nil)

        // bluetoothd gives the Handle refusal's answer for other causes too: without the
        // version the match is only possible.
        #expect(cause(Self.applicationRefusal, other, nil)! == ("gatt-handle-required", false))
        #expect(cause(Self.applicationRefusal, other, BlueZVersion(5, 75))! == ("gatt-handle-required", true))
        #expect(cause(Self.applicationRefusal, other, BlueZVersion(5, 76)) == nil)
        #expect(cause(Self.applicationRefusal, other, BlueZVersion(5, 73)) == nil)

        let certain = KnownProblems.explanation(KnownProblems.cause(of: Self.advertisementRefusal, kernel: pi, bluetoothd: nil)!)
        #expect(certain.hasPrefix("known problem ext-adv-data-length: ") && certain.contains("what to do: "))
        let possible = KnownProblems.explanation(
            KnownProblems.cause(of: Self.applicationRefusal, kernel: other, bluetoothd: nil)!)
        #expect(
            possible.hasPrefix(
                "possibly known problem gatt-handle-required (only with bluetoothd 5.74-5.75; gattd --doctor checks): "))
    }

    @Test("Debian 13's kernel 6.12.117 with 5.82 and 5.87, as the guest suite runs them: nothing found")
    func debian13Kernel() {
        let trixie = "6.12.117+deb13-amd64"
        #expect(KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 82), kernel: trixie)).isEmpty)
        #expect(KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 87), kernel: trixie)).isEmpty)
        // A refusal there is not put down to the advertising-length bug: the kernel lacks its check.
        #expect(
            KnownProblems.cause(
                of: Self.advertisementRefusal, kernel: KernelRelease(trixie), bluetoothd: BlueZVersion(5, 82)) == nil)
        #expect(KnownProblems.cause(of: Self.advertisementRefusal, kernel: KernelRelease(trixie), bluetoothd: nil) == nil)
    }

    @Test("a healthy 5.82 finds nothing; the report says so")
    func healthy() {
        let report = DoctorReport(facts: Self.facts(active: 1, gattdAdvertising: ["main"]))
        #expect(report.findings.isEmpty)
        #expect(!report.foundProblem)
        #expect(report.text.hasSuffix("no known problem found"))
        #expect(report.text.contains("ActiveInstances 1 (gattd's 1, other programs' 0)"))
    }

    @Test("the extended advertising bug: certain with version and kernel, possible without the version")
    func extendedAdvertising() {
        let certain = KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 79), kernel: "6.12.93+rpt-rpi-v8"))
        #expect(certain.map(\.id) == ["ext-adv-data-length"])
        #expect(certain.first?.certainty == .certain)
        let unknownVersion = KnownProblems.diagnose(Self.facts(version: nil, kernel: "6.18.34+rpt-rpi-2712"))
        #expect(unknownVersion.map(\.id) == ["ext-adv-data-length"])
        #expect(unknownVersion.first?.certainty == .possible)
        #expect(KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 87), kernel: "6.12.93")).isEmpty)
        #expect(KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 79))).isEmpty)
        let refusedElsewhere = KnownProblems.diagnose(
            Self.facts(version: BlueZVersion(5, 82), refusals: [Self.advertisementRefusal]))
        #expect(refusedElsewhere.map(\.id) == ["ext-adv-data-length"])
        #expect(refusedElsewhere.first?.certainty == .possible)
    }

    @Test("5.74/5.75 are named by version alone; a refusal from status is explained once")
    func handleRequired() {
        #expect(KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 74))).map(\.id) == ["gatt-handle-required"])
        // As gattd's status gives it (`Refusals`): bluetoothd's error name and message.
        let statusRefusal = Self.applicationRefusal
        let found = KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 75), refusals: [statusRefusal]))
        #expect(found.map(\.id) == ["gatt-handle-required"])
        let unexplained = KnownProblems.diagnose(Self.facts(version: BlueZVersion(5, 82), refusals: [statusRefusal]))
        #expect(unexplained.map(\.id) == ["gattd-refused"])
        #expect(unexplained.first?.severity == .problem)
        #expect(unexplained.first?.evidence == "org.bluez.Error.Failed: Failed to create entry in database")
    }

    @Test("5.66 without SupportedCapabilities: two notes and no problem")
    func notes() {
        let report = DoctorReport(facts: Self.facts(version: BlueZVersion(5, 66), capabilities: nil))
        #expect(report.findings.map(\.id) == ["adv-update-failure", "adv-capabilities-experimental"])
        #expect(!report.foundProblem)
        #expect(report.text.contains("note adv-capabilities-experimental: "))
    }

    @Test("ControllerMode = bredr, an adapter off, others' advertisements, no bluetoothd")
    func plainFacts() {
        #expect(
            KnownProblems.diagnose(Self.facts(mainConf: "[General]\nControllerMode = bredr\n")).map(\.id) == [
                "controller-mode-bredr"
            ])
        var off = Self.facts()
        off.adapters[0].powered = false
        #expect(KnownProblems.diagnose(off).map(\.id) == ["adapter-off"])
        #expect(KnownProblems.diagnose(off).first?.severity == .problem)
        var otherOff = Self.facts()
        otherOff.adapters.append(DoctorFacts.Adapter(name: "hci1"))
        otherOff.adapters[1].powered = false
        otherOff.adapters[1].advertising = DoctorFacts.AdvertisingManager()
        #expect(KnownProblems.diagnose(otherOff).map(\.id) == ["adapter-off"])
        #expect(KnownProblems.diagnose(otherOff).first?.severity == .note)
        let others = KnownProblems.diagnose(Self.facts(active: 3, gattdAdvertising: ["main"]))
        #expect(others.map(\.id) == ["advertisements-held-by-others"])
        #expect(others.first?.summary == "another program holds 2 advertising instances on hci0")
        var absent = Self.facts()
        absent.bluetoothd = .init(running: false, versionNote: "not running")
        absent.adapters = []
        #expect(KnownProblems.diagnose(absent).map(\.id) == ["bluetoothd-not-running"])
        var empty = Self.facts()
        empty.adapters = []
        #expect(KnownProblems.diagnose(empty).map(\.id) == ["no-adapter"])
    }

    @Test("--json is one valid JSON object with the documented keys")
    func json() throws {
        let report = DoctorReport(facts: Self.facts(version: BlueZVersion(5, 79), kernel: "6.12.93+rpt-rpi-v8"))
        let value = try JSONParser.parse(report.json)
        for key in [
            "gattd", "bus", "bluetoothd", "kernel", "adapters", "mainConf", "gattdState", "notVisible", "findings", "problem",
        ] {
            #expect(value[key] != nil, "\(key)")
        }
        #expect(value["bluetoothd"]?["version"]?.stringValue == "5.79")
        #expect(value["findings"]?.typeName == "array")
        #expect(!report.json.contains("\n"))
        var unreachable = Self.facts()
        unreachable.busError = "no bus"
        let bus = DoctorReport(facts: unreachable)
        #expect(bus.findings.map(\.id) == ["system-bus"])
        #expect(try JSONParser.parse(bus.json)["bus"]?["reachable"]?.typeName == "boolean")
    }
}
