// SPDX-License-Identifier: MIT

import BLEModel
import Foundation
import Testing

@Suite("Security configuration")
struct SecurityConfigurationTests {
    static let service = """
        "services": [{"uuid": "180F", "characteristics": [{"id": "c", "uuid": "2A19", "flags": ["encrypt-read"]}]}]
        """

    @Test("absent security: no pairing, and a flag that needs encryption is refused at its path")
    func absent() {
        #expect(
            issueDescriptions("{\"version\": 1, \(Self.service)}") == [
                "services[0].characteristics[0].flags[0]: flag \"encrypt-read\" needs a paired (encrypted) link, "
                    + "but gattd does not pair (set \"security\": {\"pairing\": \"just-works\"})"
            ])
    }

    @Test("defaults of a pairing mode: a 120 s window, bondedOnly off")
    func defaults() throws {
        let loaded = try load("{\"version\": 1, \"security\": {\"pairing\": \"just-works\"}, \(Self.service)}").get()
        let security = loaded.configuration.security
        #expect(security.pairing == .justWorks && security.pairing.capability == "NoInputNoOutput")
        #expect(security.pairable == .window(seconds: 120))
        #expect(!security.bondedOnly && security.onPasskey == nil)
        let report = CheckReport(path: "x.json", configuration: loaded.configuration).text
        #expect(
            report.hasSuffix(
                "  security: pairing just-works, pairable for 120 s after start and after `gattctl pairing open`, bondedOnly no"))
    }

    @Test("every mode states what it can satisfy")
    func reachable() {
        let authenticated = """
            {"version": 1, "security": {"pairing": "%@"}, "services": [{"uuid": "180F", "characteristics": [
              {"id": "c", "uuid": "2A19", "flags": ["encrypt-authenticated-read", "secure-write", "encrypt-notify"]}]}]}
            """
        let justWorks = issueDescriptions(authenticated.replacingOccurrences(of: "%@", with: "just-works"))
        #expect(justWorks.count == 2)
        #expect(justWorks.allSatisfy { $0.contains("cannot give") })
        #expect(issueDescriptions(authenticated.replacingOccurrences(of: "%@", with: "display-passkey")) == ["<loaded>"])
    }

    @Test("numeric-comparison: DisplayYesNo, authenticated and Secure Connections flags pass --check")
    func numericComparison() throws {
        let flags = """
            {"version": 1, "security": {"pairing": "numeric-comparison"}, "services": [{"uuid": "180F", "characteristics": [
              {"id": "c", "uuid": "2A19", "flags": ["encrypt-authenticated-read", "secure-read", "secure-write",
               "secure-notify", "encrypt-authenticated-write", "encrypt-read"]}]}]}
            """
        #expect(issueDescriptions(flags) == ["<loaded>"])
        let security = try load(flags).get().configuration.security
        #expect(security.pairing.capability == "DisplayYesNo" && security.pairing.authenticates)
        #expect(security.confirmSeconds == 20 && security.onConfirm == nil)
        let report = CheckReport(path: "x.json", configuration: try load(flags).get().configuration).text
        #expect(report.contains("pairing numeric-comparison, pairable for 120 s"))
        #expect(report.hasSuffix("bondedOnly no, confirmations wait 20 s"))
    }

    @Test("numeric-comparison: onConfirm and confirmSeconds are read, checked and belong to that mode only")
    func confirmKeys() throws {
        let good = try load(
            """
            {"version": 1, "security": {"pairing": "numeric-comparison", "confirmSeconds": 7,
              "onConfirm": {"argv": ["/usr/bin/ask", "-q"]}}, \(Self.service)}
            """
        ).get().configuration.security
        #expect(good.confirmSeconds == 7 && good.onConfirm?.argv == ["/usr/bin/ask", "-q"])
        #expect(
            issueDescriptions(
                "{\"version\": 1, \"security\": {\"pairing\": \"numeric-comparison\", \"confirmSeconds\": 26}, \(Self.service)}"
            ).count == 1)
        #expect(
            issueDescriptions(
                "{\"version\": 1, \"security\": {\"pairing\": \"numeric-comparison\", \"confirmSeconds\": 0}, \(Self.service)}"
            ).first?.hasPrefix("security.confirmSeconds") == true)
        #expect(
            issueDescriptions(
                """
                {"version": 1, "security": {"pairing": "numeric-comparison", "onConfirm": {"argv": ["x"], "timeoutMs": 5}},
                 \(Self.service)}
                """
            ).first?.hasPrefix("security.onConfirm") == true)
        #expect(
            issueDescriptions(
                "{\"version\": 1, \"security\": {\"pairing\": \"display-passkey\", \"confirmSeconds\": 5}, \(Self.service)}"
            ) == [
                "security.confirmSeconds: \"confirmSeconds\" applies only with \"pairing\": \"numeric-comparison\" "
                    + "(display-passkey asks nobody to confirm)"
            ])
        #expect(
            issueDescriptions(
                """
                {"version": 1, "security": {"pairing": "just-works", "onConfirm": {"argv": ["x"]}}, \(Self.service)}
                """
            ) == [
                "security.onConfirm: \"onConfirm\" applies only with \"pairing\": \"numeric-comparison\" "
                    + "(just-works asks nobody to confirm)"
            ])
        #expect(
            issueDescriptions(
                """
                {"version": 1, "security": {"pairing": "numeric-comparison", "onPasskey": {"argv": ["x"]}}, \(Self.service)}
                """
            ).first?.hasPrefix("security.onPasskey: \"onPasskey\" runs only with") == true)
    }

    @Test("a reload that changes security applies at the next start")
    func diff() throws {
        let old = try load("{\"version\": 1, \"security\": {\"pairing\": \"just-works\"}, \(Self.service)}").get()
        let new = try load("{\"version\": 1, \"security\": {\"pairing\": \"display-passkey\"}, \(Self.service)}").get()
        #expect(ConfigurationDiff(from: old.configuration, to: new.configuration).restartOnly == ["security"])
    }
}
