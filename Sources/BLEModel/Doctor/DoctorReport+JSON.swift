// SPDX-License-Identifier: MIT

extension DoctorReport {
    /// One JSON object (one line): `gattd`, `bus`, `bluetoothd`, `kernel`, `adapters`,
    /// `mainConf`, `gattdState`, `notVisible`, `findings`, `problem` (docs/known-problems.md).
    public var json: String { jsonValue.canonicalText }

    var jsonValue: JSONValue {
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
                    ("channelsForPhones", facts.mainConf.settings == nil ? .null : .string(channelsForPhones)),
                ])
            ),
            ("gattdState", gattdJSON),
            ("notVisible", .array(Self.unknowable.map(JSONValue.string))),
            ("findings", .array(findings.map(findingJSON))),
            ("problem", .bool(foundProblem)),
        ])
    }

    func adapterJSON(_ adapter: DoctorFacts.Adapter) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(adapter.name)), ("address", .optional(adapter.address)), ("powered", .optional(adapter.powered)),
            ("pairable", .optional(adapter.pairable)), ("discoverable", .optional(adapter.discoverable)),
        ]
        if let manager = adapter.advertising {
            let capabilities: JSONValue =
                manager.supportedCapabilities.map { values in
                    .object(values.keys.sorted().map { ($0, .number(values[$0] ?? 0)) })
                } ?? .null
            members.append(
                (
                    "advertising",
                    .object([
                        ("supportedInstances", .optional(manager.supportedInstances)),
                        ("activeInstances", .optional(manager.activeInstances)),
                        ("gattdInstances", .number(KnownProblems.ownAdvertisements(adapter, facts))),
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

    var gattdJSON: JSONValue {
        let gattd = facts.gattd
        return .object([
            ("running", .bool(gattd.running)), ("note", .optional(gattd.note)), ("adapter", .optional(gattd.adapter)),
            ("registered", .optional(gattd.registered)), ("registration", .optional(gattd.registration)),
            ("advertisements", .object(gattd.advertisements.map { ($0.id, .string($0.state)) })),
            ("advertising", .array(gattd.advertising.map(JSONValue.string))),
            ("lastError", .optional(gattd.lastError)),
        ])
    }

    func findingJSON(_ finding: DoctorFinding) -> JSONValue {
        .object([
            ("id", .string(finding.id)), ("severity", .string(finding.severity.rawValue)),
            ("certainty", .string(finding.certainty.rawValue)), ("summary", .string(finding.summary)),
            ("evidence", .string(finding.evidence)), ("remedy", .string(finding.remedy)),
            ("references", .array(finding.references.map(JSONValue.string))),
        ])
    }
}
