// SPDX-License-Identifier: MIT

import BLEModel
import Foundation
import Testing

/// `accept`: the values a central may write, said in the definition, and what
/// `--check` says about a definition before it runs.
@Suite("Accept rules and --check's warnings")
struct AcceptRuleTests {
    /// One characteristic with `fields` (JSON members) added, in a service, with an
    /// advertisement unless `advertise` is false.
    private func document(_ fields: String, advertise: Bool = true) -> String {
        let advertisement = advertise ? #", "advertisements": [{"id": "main", "serviceUUIDs": ["181A"]}]"# : ""
        return #"{"version": 1, "services": [{"id": "s", "uuid": "181A", "characteristics": [{"id": "c", "uuid": "2A6E", "#
            + fields + "}]}]" + advertisement + "}"
    }

    private func rule(_ fields: String) throws -> AcceptRule {
        let loaded = try load(document(fields)).get()
        return try #require(loaded.configuration.services[0].characteristics[0].accept)
    }

    private let setpoint = #""flags": ["read", "write"], "value": {"int16": 2100}, "minLength": 2, "maxLength": 2, "#

    @Test("a range and a list decode with the value's type; the default error is 0x80")
    func decodes() throws {
        let range = try rule(setpoint + #""accept": {"min": 1000, "max": 3000}"#)
        #expect(range.type == .int16)
        #expect(range.condition == .range(min: .signed(1000), max: .signed(3000)))
        #expect(range.error == .application(0x80))
        #expect(range.summary == "int16 1000...3000, else 0x80")
        let list = try rule(
            #""flags": ["write"], "value": {"uint8": 1}, "accept": {"oneOf": [0, 1, 2], "error": "0x9f"}"#)
        #expect(list.condition == .oneOf([.unsigned(0), .unsigned(1), .unsigned(2)]))
        #expect(list.error == .application(0x9F))
        let open = try rule(#""flags": ["write"], "value": {"float32": 0.5}, "accept": {"min": -1.5}"#)
        #expect(open.condition == .range(min: .real(-1.5), max: nil))
    }

    @Test("a rule admits exactly its numbers; another length is 0x0D, SFLOAT specials pass none")
    func admits() throws {
        let range = try rule(setpoint + #""accept": {"min": 1000, "max": 3000, "error": 129}"#)
        #expect(range.refusal(of: [0xE8, 0x03]) == nil, "1000")
        #expect(range.refusal(of: [0xB8, 0x0B]) == nil, "3000")
        #expect(range.refusal(of: [0xE7, 0x03]) == .application(0x81), "999")
        #expect(range.refusal(of: [0xB9, 0x0B]) == .application(0x81), "3001")
        #expect(range.refusal(of: [0x18, 0xFC]) == .application(0x81), "-1000 as int16, not 64536")
        #expect(range.refusal(of: [0xE8]) == .invalidAttributeValueLength)
        let list = try rule(#""flags": ["write"], "value": {"uint8": 1}, "accept": {"oneOf": [0, 1, 2]}"#)
        #expect(list.refusal(of: [2]) == nil)
        #expect(list.refusal(of: [3]) == .application(0x80))
        let sfloat = try rule(#""flags": ["write"], "value": {"sfloat": 20.5}, "accept": {"min": 0, "max": 100}"#)
        #expect(sfloat.refusal(of: [0xCD, 0xF0]) == nil, "205e-1 = 20.5")
        #expect(sfloat.refusal(of: [0xFF, 0x07]) == .application(0x80), "NaN")
        let float = try rule(#""flags": ["write"], "value": {"float64": 1}, "accept": {"max": 2}"#)
        #expect(float.refusal(of: (2.5).bitPattern.littleEndianBytes) == .application(0x80))
        #expect(float.refusal(of: Double.nan.bitPattern.littleEndianBytes) == .application(0x80))
    }

    @Test("--check refuses a rule it cannot keep, naming the place")
    func refusesBadRules() {
        let path = "services[0].characteristics[0]"
        #expect(
            issueDescriptions(document(setpoint + #""accept": {"min": 30, "max": 10}"#))
                == ["\(path).accept.min: min 30 is greater than max 10"])
        #expect(
            issueDescriptions(document(setpoint + #""accept": {"min": 40000}"#))
                == ["\(path).accept.min: 40000 is out of range -32768...32767 (the characteristic's value is int16)"])
        #expect(
            issueDescriptions(document(setpoint + #""accept": {"max": 1, "error": "0x13"}"#)).first?.hasPrefix(
                "\(path).accept.error: ATT error 0x13 cannot be sent by gattd") == true)
        #expect(
            issueDescriptions(document(setpoint + #""accept": {"oneOf": [1], "min": 0}"#))
                == [#"\#(path).accept: "oneOf" and "min"/"max" are exclusive: give a list or a range"#])
        #expect(
            issueDescriptions(document(setpoint + #""accept": {}"#))
                == [#"\#(path).accept: accept needs "min", "max" (or both) or "oneOf""#])
        #expect(
            issueDescriptions(document(#""flags": ["write"], "value": {"hex": "0102"}, "accept": {"min": 1}"#)).first?
                .hasPrefix("\(path).accept: accept needs the characteristic's value as one number type") == true)
        #expect(
            issueDescriptions(document(#""flags": ["read"], "value": {"uint8": 1}, "accept": {"min": 1}"#))
                == [#"\#(path).accept: accept needs a writable characteristic (flag "write")"#])
        #expect(
            issueDescriptions(
                document(#""flags": ["write-without-response"], "value": {"uint8": 1}, "accept": {"min": 1}"#)
            ).first?.hasPrefix("\(path).accept: cannot refuse writes") == true)
        #expect(
            issueDescriptions(document(#""flags": ["write"], "value": {"uint8": 1}, "accept": {"min": 5}"#))
                == ["\(path).value: initial value 1 is not accepted by its own rule (uint8 >= 5, else 0x80)"])
        #expect(
            issueDescriptions(
                document(#""flags": ["write"], "value": {"uint16": 1}, "maxLength": 1, "accept": {"max": 5}"#)
            ).contains { $0.contains("no write could pass: a uint16 is 2 byte(s)") })
    }

    @Test("\"min\", \"max\" or \"range\" on a characteristic point to accept, hooks and handlers")
    func pointsToAccept() {
        for key in ["min", "max", "range", "oneOf"] {
            let issues = issueDescriptions(document(setpoint + "\"\(key)\": 10"))
            #expect(issues.count == 1)
            #expect(issues[0].hasPrefix("services[0].characteristics[0].\(key): unknown key \"\(key)\": the values"))
            #expect(issues[0].contains(#""accept": {"min": 10, "max": 30}"#))
            #expect(issues[0].contains("onWrite") && issues[0].contains("handler"))
            #expect(!issues[0].contains("did you mean"))
        }
        #expect(issueDescriptions(document(setpoint + #""persit": true"#)) == [
            #"services[0].characteristics[0].persit: unknown key "persit" (did you mean "persist"?)"#
        ])
    }

    private func warnings(_ text: String) throws -> [String] {
        try load(text).get().warnings.map(\.description)
    }

    @Test("a timer whose encoding cannot meet the length bounds is a warning")
    func timerWidth() throws {
        let text = document(
            #""flags": ["read", "notify"], "value": {"uint16": 0}, "minLength": 2, "maxLength": 2, "#
                + #""update": {"everyMs": 1000, "source": {"counter": {}}, "whileUnsubscribed": true}"#)
        #expect(try warnings(text) == [
            "warning: services[0].characteristics[0].update: each update is 1 byte(s) (uint8, the default encode), "
                + "outside minLength...maxLength 2...2: every value will be refused (logged) and the characteristic "
                + #"keeps its initial value; set "encode" (e.g. {"uint16": "$"}) or the length bounds"#
        ])
        let fixed = text.replacingOccurrences(of: #""whileUnsubscribed""#, with: #""encode": {"uint16": "$"}, "whileUnsubscribed""#)
        #expect(try warnings(fixed) == [])
    }

    @Test("a readable timer that pauses while unsubscribed is a warning; never runs without notify")
    func timerWhileUnsubscribed() throws {
        let notify = document(
            #""flags": ["read", "notify"], "value": {"uint8": 0}, "update": {"everyMs": 1000, "source": {"counter": {}}}"#)
        #expect(try warnings(notify).count == 1)
        #expect(try warnings(notify)[0].contains(#"a central that only reads sees the last value"#))
        let readOnly = notify.replacingOccurrences(of: #"["read", "notify"]"#, with: #"["read"]"#)
        #expect(try warnings(readOnly).count == 1)
        #expect(try warnings(readOnly)[0].contains("updates never run"))
        let notifyOnly = notify.replacingOccurrences(of: #"["read", "notify"]"#, with: #"["notify"]"#)
        #expect(try warnings(notifyOnly) == [], "nobody reads it: pausing is what saves the work")
    }

    @Test("a deciding hook beside a handler is a warning: the handler decides while it is there")
    func hookBesideHandler() throws {
        let text = document(
            #""flags": ["write"], "handler": {"fallback": "value"}, "#
                + #""onWrite": {"argv": ["/bin/true"], "decides": true}"#)
        #expect(try warnings(text).count == 1)
        #expect(try warnings(text)[0].hasPrefix(
            "warning: services[0].characteristics[0].onWrite.decides: while a program's handler takes"))
        #expect(try warnings(text.replacingOccurrences(of: #""decides": true"#, with: #""decides": false"#)) == [])
    }

    @Test("no advertisement, or none enabled, is a warning")
    func noAdvertisement() throws {
        func warnings(_ text: String) throws -> [String] {
            try load(text).get().configuration.discoveryWarnings.map(\.description)
        }
        let none = document(#""flags": ["read"]"#, advertise: false)
        #expect(try warnings(none) == [
            "warning: no advertisement: phones will not find it (a central that knows the address can still "
                + #"connect); add one under "advertisements" (config/README.md)"#
        ])
        let disabled = document(#""flags": ["read"]"#).replacingOccurrences(of: #""id": "main","#, with: #""id": "main", "enabled": false,"#)
        #expect(try warnings(disabled) == [
            "warning: advertisements: no advertisement is enabled: phones will not find it until one is started "
                + "(gattctl advertise ID on)"
        ])
        #expect(try warnings(document(#""flags": ["read"]"#)) == [])
    }

    @Test("--check says per characteristic where its value comes from and who decides its writes")
    func summary() throws {
        let text = document(
            setpoint
                + #""accept": {"min": 1000, "max": 3000, "error": "0x81"}, "handler": {"timeoutMs": 500, "fallback": "error", "error": "0x82"}, "#
                + #""onWrite": {"argv": ["/usr/bin/true"], "decides": false}"#)
        let report = CheckReport(path: "x.json", configuration: try load(text).get().configuration).text
        let lines = report.split(separator: "\n").map(String.init)
        #expect(lines.contains("      value: initially int16 2100; centrals' writes"))
        #expect(lines.contains(
            "      reads: a program's handler when one is registered (answers within 500 ms), else ATT error 0x82"))
        #expect(lines.contains(
            "      writes: length 2...2 (else 0x0d) -> accept int16 1000...3000, else 0x81 -> a program's handler "
                + "decides when one is registered (within 500 ms), else ATT error 0x82 -> stored, then hook "
                + "/usr/bin/true runs"))
        let timer = document(
            #""flags": ["read", "notify"], "value": {"uint8": 0}, "#
                + #""update": {"everyMs": 250, "source": {"counter": {}}, "whileUnsubscribed": true}"#)
        let timerReport = CheckReport(path: "x.json", configuration: try load(timer).get().configuration).text
        #expect(timerReport.contains(
            "      value: initially uint8 0; every 250 ms from a counter as uint8, always\n      reads: the stored value"))
    }
}

extension UInt64 {
    fileprivate var littleEndianBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> (8 * UInt64($0))) } }
}
