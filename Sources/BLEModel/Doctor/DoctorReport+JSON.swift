// SPDX-License-Identifier: MIT

extension DoctorReport {
    /// A JSON value written without Foundation (keys keep their order).
    indirect enum JSON {
        case null
        case bool(Bool)
        case int(Int)
        case string(String)
        case array([JSON])
        case object([(String, JSON)])

        static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
        static func optional(_ value: Int?) -> JSON { value.map(JSON.int) ?? .null }
        static func optional(_ value: Bool?) -> JSON { value.map(JSON.bool) ?? .null }
        static func optional(_ value: [String]?) -> JSON { value.map { .array($0.map(JSON.string)) } ?? .null }

        var text: String {
            switch self {
            case .null: "null"
            case .bool(let value): value ? "true" : "false"
            case .int(let value): String(value)
            case .string(let value): jsonQuoted(value)
            case .array(let values): "[" + values.map(\.text).joined(separator: ",") + "]"
            case .object(let members):
                "{" + members.map { jsonQuoted($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
            }
        }
    }

    /// One JSON object (one line): `gattd`, `bus`, `bluetoothd`, `kernel`, `adapters`,
    /// `mainConf`, `gattdState`, `notVisible`, `findings`, `problem` (docs/known-problems.md).
    public var json: String { jsonValue.text }

    var jsonValue: JSON {
        let bluetoothd = facts.bluetoothd
        return .object([
            ("gattd", .string(facts.gattdVersion)),
            ("bus", .object([("reachable", .bool(facts.busError == nil)), ("error", .optional(facts.busError))])),
            (
                "bluetoothd",
                .object([
                    ("running", .bool(bluetoothd.running)), ("pid", .optional(bluetoothd.pid.map(Int.init))),
                    ("version", .optional(bluetoothd.version?.description)), ("versionSource", .string(bluetoothd.versionNote)),
                    ("commandLine", .optional(bluetoothd.commandLine)),
                ])
            ),
            ("kernel", .optional(facts.kernel?.text)),
            ("adapters", .array(facts.adapters.map(adapterJSON))),
            (
                "mainConf",
                .object([
                    ("path", .string(facts.mainConf.path)), ("origin", .string(facts.mainConf.origin)),
                    ("readable", .bool(facts.mainConf.settings != nil)),
                    ("error", .optional(facts.mainConf.unreadableReason)),
                    (
                        "settings",
                        facts.mainConf.settings.map { settings in
                            .array(
                                settings.map {
                                    .object([
                                        ("section", .string($0.section)), ("key", .string($0.key)),
                                        ("value", .optional($0.value)), ("default", .string($0.defaultValue)),
                                    ])
                                })
                        } ?? .null
                    ),
                ])
            ),
            ("gattdState", gattdJSON),
            ("notVisible", .array(Self.unknowable.map(JSON.string))),
            ("findings", .array(findings.map(findingJSON))),
            ("problem", .bool(foundProblem)),
        ])
    }

    func adapterJSON(_ adapter: DoctorFacts.Adapter) -> JSON {
        var members: [(String, JSON)] = [
            ("name", .string(adapter.name)), ("address", .optional(adapter.address)), ("powered", .optional(adapter.powered)),
            ("pairable", .optional(adapter.pairable)), ("discoverable", .optional(adapter.discoverable)),
        ]
        if let manager = adapter.advertising {
            let capabilities: JSON =
                manager.supportedCapabilities.map { values in
                    .object(values.keys.sorted().map { ($0, .int(values[$0] ?? 0)) })
                } ?? .null
            members.append(
                (
                    "advertising",
                    .object([
                        ("supportedInstances", .optional(manager.supportedInstances)),
                        ("activeInstances", .optional(manager.activeInstances)),
                        ("gattdInstances", .int(KnownProblems.ownAdvertisements(adapter, facts))),
                        ("otherInstances", .optional(KnownProblems.otherAdvertisements(adapter, facts))),
                        ("supportedIncludes", .optional(manager.supportedIncludes)),
                        ("supportedSecondaryChannels", .optional(manager.supportedSecondaryChannels)),
                        ("supportedCapabilities", capabilities),
                        ("supportedFeatures", .optional(manager.supportedFeatures)),
                    ])
                ))
        } else {
            members.append(("advertising", .null))
        }
        return .object(members)
    }

    var gattdJSON: JSON {
        let gattd = facts.gattd
        return .object([
            ("running", .bool(gattd.running)), ("note", .optional(gattd.note)), ("adapter", .optional(gattd.adapter)),
            ("registered", .optional(gattd.registered)), ("registration", .optional(gattd.registration)),
            ("advertisements", .object(gattd.advertisements.map { ($0.id, .string($0.state)) })),
            ("advertising", .array(gattd.advertising.map(JSON.string))),
            ("lastError", .optional(gattd.lastError)),
        ])
    }

    func findingJSON(_ finding: DoctorFinding) -> JSON {
        .object([
            ("id", .string(finding.id)), ("severity", .string(finding.severity.rawValue)),
            ("certainty", .string(finding.certainty.rawValue)), ("summary", .string(finding.summary)),
            ("evidence", .string(finding.evidence)), ("remedy", .string(finding.remedy)),
            ("references", .array(finding.references.map(JSON.string))),
        ])
    }
}
