// SPDX-License-Identifier: MIT

import BLEModel
import Foundation
import Testing

@Suite("Channel configuration")
struct ChannelConfigurationTests {
    static func document(_ channels: String, pairing: String = "none") -> String {
        """
        {"version": 1, "security": {"pairing": "\(pairing)"},
         "services": [{"id": "dfu", "uuid": "FE59", "characteristics": [{"id": "c", "uuid": "2A19", "flags": ["read"]}]},
                      {"id": "logs", "uuid": "FE5A"}],
         "channels": \(channels)}
        """
    }

    @Test("a full entry decodes; psm 0 and an absent psm both let the kernel pick")
    func decodes() throws {
        let text = Self.document(
            """
            [{"id": "fw", "psm": "0x81", "security": "encrypt", "service": "dfu", "program": {"argv": ["/bin/cat"]}},
             {"id": "log", "psm": 0, "service": "logs"}]
            """, pairing: "just-works")
        let configuration = try load(text).get().configuration
        #expect(
            configuration.channels == [
                ChannelDefinition(
                    id: "fw", psm: 0x81, security: .encrypt, service: "dfu", program: ["/bin/cat"], sourcePath: "channels[0]"),
                ChannelDefinition(id: "log", psm: nil, security: .none, service: "logs", sourcePath: "channels[1]"),
            ])
        #expect(configuration.channels.map(\.security.kernelLevel) == [2, 1])
        let report = CheckReport(path: "x.json", configuration: configuration).text
        #expect(
            report.contains(
                "  channel fw: psm 0x81, security encrypt, PSM characteristic (encrypt-read) in service dfu, program /bin/cat per channel"
            ))
        #expect(
            report.contains(
                "  channel log: psm chosen by the kernel (kept in the state), security none, PSM characteristic (read) "
                    + "in service logs, taker registered over the control API"))
    }

    @Test("PSMs outside the LE dynamic range, clashes and bad ids are refused at their paths")
    func psmRules() {
        let issues = issueDescriptions(
            Self.document(
                """
                [{"id": "a", "psm": 37, "service": "dfu"}, {"id": "b", "psm": 256, "service": "logs"},
                 {"id": "c", "psm": 129, "service": "dfu"}, {"id": "d", "psm": "0x81", "service": "logs"},
                 {"id": "c", "service": "x-y"}, {"id": "e f", "service": "logs", "psm": 65536}]
                """))
        #expect(
            issues == [
                "channels[0].psm: PSM 37 (0x25) is not an LE dynamic PSM: use 0x80...0xFF, or 0 (or leave \"psm\" out) "
                    + "for one the kernel picks",
                "channels[1].psm: PSM 256 (0x100) is not an LE dynamic PSM: use 0x80...0xFF, or 0 (or leave \"psm\" out) "
                    + "for one the kernel picks",
                "channels[2].service: service \"dfu\" already carries the PSM characteristic of the channel at channels[0] "
                    + "(a service holds one: give this channel another service)",
                "channels[3].psm: PSM 0x81 is already asked for at channels[2].psm",
                "channels[3].service: service \"logs\" already carries the PSM characteristic of the channel at channels[1] "
                    + "(a service holds one: give this channel another service)",
                "channels[4].id: duplicate channel id \"c\" (first used at channels[2].id)",
                "channels[4].service: no service has id \"x-y\"",
                "channels[5].id: id \"e f\" may only contain A-Z, a-z, 0-9, '_' and '-'",
                "channels[5].service: service \"logs\" already carries the PSM characteristic of the channel at channels[1] "
                    + "(a service holds one: give this channel another service)",
                "channels[5].psm: 65536 is out of range 0...65535",
            ])
    }

    @Test("keys, types and the security words are checked with their paths")
    func structure() {
        let issues = issueDescriptions(
            Self.document(
                """
                [{"service": "dfu", "securty": "none"}, {"id": "b", "service": "logs", "security": "encrpyt"},
                 {"id": "c", "service": "dfu", "program": {"argv": []}}, 5]
                """))
        #expect(issues.contains("channels[0]: missing required key \"id\""))
        #expect(issues.contains { $0.hasPrefix("channels[0].securty: unknown key \"securty\"") })
        #expect(issues.contains { $0.hasPrefix("channels[1].security: \"encrpyt\" is not one of \"none\", \"encrypt\"") })
        #expect(issues.contains("channels[2].program.argv: argv must name a program"))
        #expect(issues.contains("channels[3]: expected an object, found number"))
    }

    @Test("the channel's security must be reachable with the pairing mode")
    func securityAgainstPairing() {
        let encrypt = "[{\"id\": \"a\", \"service\": \"dfu\", \"security\": \"encrypt\"}]"
        #expect(
            issueDescriptions(Self.document(encrypt)) == [
                "channels[0].security: channel security \"encrypt\" needs a paired (encrypted) link, but gattd does not pair "
                    + "(set \"security\": {\"pairing\": \"just-works\"})"
            ])
        #expect(issueDescriptions(Self.document(encrypt, pairing: "just-works")) == ["<loaded>"])
        let secure = "[{\"id\": \"a\", \"service\": \"dfu\", \"security\": \"secure\"}]"
        #expect(issueDescriptions(Self.document(secure, pairing: "just-works")).first?.contains("cannot give") == true)
        #expect(issueDescriptions(Self.document(secure, pairing: "display-passkey")) == ["<loaded>"])
    }

    @Test("a service that defines the PSM characteristic itself is refused")
    func reservedCharacteristic() {
        let text = """
            {"version": 1, "services": [{"id": "dfu", "uuid": "FE59", "characteristics": [
               {"id": "psm", "uuid": "ABDD3056-28FA-441D-A470-55A75A52553A", "flags": ["read"]}]}],
             "channels": [{"id": "a", "service": "dfu"}]}
            """
        let issues = issueDescriptions(text)
        #expect(
            issues == [
                "channels[0].service: service \"dfu\" defines the PSM characteristic itself (services[0].characteristics[0]); "
                    + "gattd adds it for the channel: remove it from the service"
            ])
    }

    @Test("the PSM characteristic: little-endian, at the channel's level, only for channels that listen")
    func psmCharacteristic() throws {
        let text = Self.document(
            """
            [{"id": "fw", "security": "encrypt", "service": "dfu"}, {"id": "log", "service": "logs", "psm": 200}]
            """, pairing: "just-works")
        let configuration = try load(text).get().configuration
        let served = configuration.addingPSMCharacteristics(["fw": 0x0081])
        let added = try #require(served.services[0].characteristics.last)
        #expect(added.uuid.description.uppercased() == "ABDD3056-28FA-441D-A470-55A75A52553A")
        #expect(added.id == "dfu.l2cap-psm" && added.flags == [.encryptRead] && added.value == [0x81, 0x00])
        #expect(added.persist == false && added.minLength == 2 && added.maxLength == 2)
        #expect(served.services[1].characteristics.isEmpty)
        #expect(configuration.addingPSMCharacteristics([:]) == configuration)
    }

    @Test("a change of channels applies at restart")
    func reload() throws {
        let old = try load(Self.document("[{\"id\": \"a\", \"service\": \"dfu\"}]")).get().configuration
        let same = try load(Self.document("[ {\"id\": \"a\",  \"service\": \"dfu\"}]")).get().configuration
        let new = try load(Self.document("[{\"id\": \"a\", \"service\": \"dfu\", \"psm\": 130}]")).get().configuration
        #expect(ConfigurationDiff(from: old, to: same).isEmpty)
        #expect(ConfigurationDiff(from: old, to: new).restartOnly == ["channels"])
    }
}
