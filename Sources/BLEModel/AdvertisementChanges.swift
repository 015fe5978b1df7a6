// SPDX-License-Identifier: MIT

/// Changes to an advertisement's data at run time (the control API's
/// `SetAdvertisementData`, `gattctl advertise set`): a JSON object with some of the keys of
/// an advertisement in the definition file, in the same syntax (typed values, UUIDs,
/// company ids), checked by the same rules and the same byte budget as `--check`.
///
/// `null` removes a key (an optional value becomes absent, a list empty). Keys that
/// decide how or whether bluetoothd registers the advertisement (`type`, intervals,
/// timeouts, `enabled`) are not changeable here: they need a reload.
public enum AdvertisementChanges {
    public static let keys = [
        "localName", "serviceUUIDs", "solicitUUIDs", "manufacturerData", "serviceData", "data", "appearance",
        "txPower", "includes",
    ]

    /// `base` with the changes in `bytes` applied, and the changes folded into
    /// `previous` (the canonical JSON text of earlier changes kept for a restart, if any).
    /// Failure lists every problem with its JSON path inside the changes, e.g.
    /// `manufacturerData["0xFFFF"]: odd number of hex digits`, or the byte budget.
    public static func apply(_ bytes: [UInt8], to base: AdvertisementDefinition, folding previous: String? = nil)
        -> Result<(definition: AdvertisementDefinition, folded: String), ConfigurationErrors>
    {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            return .failure(Self.errors([(ConfigurationIssue(path: "", message: error.message,
                line: error.position.line, column: error.position.column))]))
        }
        guard let members = root.objectValue else {
            return .failure(Self.errors([ConfigurationIssue(path: "", message: "expected an object, found \(root.typeName)")]))
        }
        var decoder = ConfigurationDecoder()
        for member in members where !keys.contains(member.key) {
            let hint = ConfigurationDecoder.advertisementKeys.contains(member.key)
                ? "cannot be changed at run time (edit the definition and reload)"
                : "unknown key" + EditDistance.hint(for: member.key, among: keys)
            decoder.context.error(member.key, hint, at: member.keyPosition)
        }
        let present = members.filter { keys.contains($0.key) && $0.value.kind != .null }
        let object = JSONValue(.object(present), at: root.position)
        let decoded = decoder.advertisement(object, "")
        var merged = base
        if let decoded {
            for member in members where keys.contains(member.key) {
                let clear = member.value.kind == .null
                switch member.key {
                case "localName": merged.localName = clear ? nil : decoded.localName
                case "serviceUUIDs": merged.serviceUUIDs = clear ? [] : decoded.serviceUUIDs
                case "solicitUUIDs": merged.solicitUUIDs = clear ? [] : decoded.solicitUUIDs
                case "manufacturerData": merged.manufacturerData = clear ? [] : decoded.manufacturerData
                case "serviceData": merged.serviceData = clear ? [] : decoded.serviceData
                case "data": merged.data = clear ? [] : decoded.data
                case "appearance": merged.appearance = clear ? nil : decoded.appearance
                case "txPower": merged.txPower = clear ? nil : decoded.txPower
                case "includes": merged.includes = clear ? [] : decoded.includes
                default: break
                }
            }
        }
        // The cross-field rules and the byte budget, as --check applies them.
        var rules = decoder.context
        merged.sourcePath = ""
        Configuration(services: [], advertisements: [merged]).validate(into: &rules, absentIDs: [])
        let issues = rules.issues.map { issue in
            var issue = issue
            if issue.path.hasPrefix(".") { issue.path.removeFirst() }
            return issue
        }
        guard !issues.contains(where: { $0.severity == .error }) else { return .failure(Self.errors(issues)) }
        merged.sourcePath = base.sourcePath
        return .success((merged, fold(members, into: previous)))
    }

    /// The members of `previous` (canonical JSON text) overwritten by `members`.
    static func fold(_ members: [JSONMember], into previous: String?) -> String {
        var folded: [JSONMember] = []
        if let previous, let earlier = try? JSONParser.parse(Array(previous.utf8)).objectValue { folded = earlier }
        for member in members {
            folded.removeAll { $0.key == member.key }
            folded.append(member)
        }
        return JSONValue(.object(folded)).canonicalText
    }

    private static func errors(_ issues: [ConfigurationIssue]) -> ConfigurationErrors {
        ConfigurationErrors(issues: issues)
    }
}
