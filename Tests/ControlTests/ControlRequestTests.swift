// SPDX-License-Identifier: MIT
import Control
import ControlAPI
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

    @Test func registerHandlerTakesReadsWritesOrBoth() throws {
        let object = DBusValue.objectPath("/h")
        let ids = DBusValue.stringArray(["setpoint"])
        func request(_ options: DBusValue) throws -> ControlRequest {
            try ControlRequest(member: "RegisterHandler", arguments: [object, ids, options])
        }
        #expect(
            try request(.variantDictionary([]))
                == .registerHandler(object: "/h", ids: ["setpoint"], operations: [.read, .write]))
        #expect(
            try request(.variantDictionary([("operations", .stringArray(["write"]))]))
                == .registerHandler(object: "/h", ids: ["setpoint"], operations: [.write]))
        #expect(
            try request(.variantDictionary([("operations", .stringArray(["read", "write"]))]))
                == .registerHandler(object: "/h", ids: ["setpoint"], operations: [.read, .write]))
        let refused: [(DBusValue, String)] = [
            (.variantDictionary([("ops", .stringArray(["read"]))]), "RegisterHandler: unknown option \"ops\" (known: operations)"),
            (
                .variantDictionary([("operations", .stringArray([]))]),
                "RegisterHandler: option operations takes a non-empty array of strings (as): read, write"
            ),
            (
                .variantDictionary([("operations", .string("read"))]),
                "RegisterHandler: option operations takes a non-empty array of strings (as): read, write"
            ),
            (
                .variantDictionary([("operations", .stringArray(["notify"]))]),
                "RegisterHandler: unknown operation \"notify\" (read, write)"
            ),
        ]
        for (options, message) in refused {
            #expect(throws: DBusError.invalidArgs(message)) { try request(options) }
        }
    }

    @Test func channelMethodsDecodeAndRefuseAnEmptyChannel() throws {
        #expect(
            try ControlRequest(member: "RegisterChannel", arguments: [.string("logs"), .objectPath("/taker")])
                == .registerChannel(channel: "logs", object: "/taker"))
        #expect(try ControlRequest(member: "UnregisterChannel", arguments: [.string("logs")]) == .unregisterChannel(channel: "logs"))
        #expect(try ControlRequest(member: "ListChannels", arguments: []) == .listChannels)
        #expect(throws: DBusError.invalidArgs("RegisterChannel: name a channel")) {
            try ControlRequest(member: "RegisterChannel", arguments: [.string(""), .objectPath("/taker")])
        }
        #expect(throws: DBusError.invalidArgs("UnregisterChannel: name a channel")) {
            try ControlRequest(member: "UnregisterChannel", arguments: [.string("")])
        }
        #expect(throws: DBusError.invalidArgs("RegisterChannel takes (so), got (s)")) {
            try ControlRequest(member: "RegisterChannel", arguments: [.string("logs")])
        }
    }

    @Test func setValueWithOptionsNamesCentralsByAddress() throws {
        let centrals: DBusValue = .variantDictionary([
            ("centrals", .stringArray(["aa:bb:cc:dd:ee:ff", "00:11:22:33:44:55", "AA:BB:CC:DD:EE:FF"]))
        ])
        #expect(
            try ControlRequest(member: "SetValueWithOptions", arguments: [.string("tx"), .bytes([1]), centrals])
                == .setValueWithOptions(id: "tx", value: [1], centrals: ["AA:BB:CC:DD:EE:FF", "00:11:22:33:44:55"]))
        #expect(
            try ControlRequest(
                member: "SetValueWithOptions", arguments: [.string("tx"), .bytes([1]), .variantDictionary([])])
                == .setValueWithOptions(id: "tx", value: [1], centrals: nil))
        let refused: [(DBusValue, String)] = [
            (
                .variantDictionary([("to", .string("x"))]),
                "SetValueWithOptions: unknown option \"to\" (known: centrals)"
            ),
            (
                .variantDictionary([("centrals", .string("AA:BB:CC:DD:EE:FF"))]),
                "SetValueWithOptions: option centrals takes an array of strings (as)"
            ),
            (
                .variantDictionary([("centrals", .stringArray([]))]),
                "SetValueWithOptions: option centrals names no central"
            ),
            (
                .variantDictionary([("centrals", .stringArray(["AA:BB:CC:DD:EE:FF", "AA:BB:CC:DD:EE"]))]),
                "SetValueWithOptions: centrals: \"AA:BB:CC:DD:EE\" is not an address like AA:BB:CC:DD:EE:FF"
            ),
        ]
        for (options, message) in refused {
            #expect(throws: DBusError.invalidArgs(message)) {
                try ControlRequest(member: "SetValueWithOptions", arguments: [.string("tx"), .bytes([1]), options])
            }
        }
    }

    @Test func centralsAreListedAndDisconnectedByAddress() throws {
        #expect(try ControlRequest(member: "ListCentrals", arguments: []) == .listCentrals)
        #expect(
            try ControlRequest(member: "DisconnectCentral", arguments: [.string("aa:bb:cc:dd:ee:0f")])
                == .disconnectCentral(address: "AA:BB:CC:DD:EE:0F"))
        let message = "DisconnectCentral: \"AA:BB:CC:DD:EE:GG\" is not an address like AA:BB:CC:DD:EE:FF"
        #expect(throws: DBusError.invalidArgs(message)) {
            try ControlRequest(member: "DisconnectCentral", arguments: [.string("AA:BB:CC:DD:EE:GG")])
        }
    }

    @Test func pairingsAreConfirmedAndRejectedByAddressOrTheOnlyOne() throws {
        #expect(
            try ControlRequest(member: "ConfirmPairing", arguments: [.string("aa:bb:cc:dd:ee:0f")])
                == .decidePairing(address: "AA:BB:CC:DD:EE:0F", accept: true))
        #expect(
            try ControlRequest(member: "RejectPairing", arguments: [.string("")])
                == .decidePairing(address: nil, accept: false))
        let message = "ConfirmPairing: \"123456\" is not an address like AA:BB:CC:DD:EE:FF (or \"\")"
        #expect(throws: DBusError.invalidArgs(message)) {
            try ControlRequest(member: "ConfirmPairing", arguments: [.string("123456")])
        }
    }
}
