// SPDX-License-Identifier: MIT
import Control
import DBusKit
import Testing

@Suite("Control API: a call's member and arguments decoded in one place")
struct ControlRequestTests {
    @Test func eachMethodDecodesItsArguments() throws {
        #expect(try ControlRequest(member: "ListCharacteristics", arguments: []) == .listCharacteristics)
        #expect(try ControlRequest(member: "GetValue", arguments: [.string("hr")]) == .getValue(id: "hr"))
        #expect(
            try ControlRequest(member: "SetValue", arguments: [.string("label"), .bytes([1, 2])])
                == .setValue(id: "label", value: [1, 2]))
        #expect(
            try ControlRequest(member: "StartAdvertising", arguments: [.string("main")])
                == .setAdvertising(id: "main", enabled: true))
        #expect(
            try ControlRequest(member: "StopAdvertising", arguments: [.string("main")])
                == .setAdvertising(id: "main", enabled: false))
        #expect(try ControlRequest(member: "GetStatus", arguments: []) == .getStatus)
        #expect(try ControlRequest(member: "Subscribe", arguments: []) == .subscribe)
        #expect(try ControlRequest(member: "Unsubscribe", arguments: []) == .unsubscribe)
    }

    @Test func wrongArgumentsAreRefusedNamingTheMethod() {
        let cases: [(String, [DBusValue], String)] = [
            ("SetValue", [.string("label")], "SetValue takes (say), got (s)"),
            ("GetValue", [], "GetValue takes (s), got ()"),
            ("GetValue", [.uint32(1)], "GetValue takes (s), got (u)"),
            ("GetStatus", [.string("x")], "GetStatus takes (), got (s)"),
        ]
        for (member, arguments, message) in cases {
            #expect(throws: DBusError.invalidArgs(message)) { try ControlRequest(member: member, arguments: arguments) }
        }
        #expect(throws: DBusError.unknownMethod("no method Reboot")) { try ControlRequest(member: "Reboot", arguments: []) }
    }
}
