// SPDX-License-Identifier: MIT

import BLEModel
import Control
import Testing

@Suite("Handler error names -> ATT results")
struct HandlerErrorsTests {
    @Test(
        "each documented name maps to its ATT error and back",
        arguments: [
            ("org.gattd.Att.ReadNotPermitted", GATTError.readNotPermitted),
            ("org.gattd.Att.WriteNotPermitted", .writeNotPermitted),
            ("org.gattd.Att.InvalidOffset", .invalidOffset),
            ("org.gattd.Att.InvalidValueLength", .invalidAttributeValueLength),
            ("org.gattd.Att.InsufficientAuthorization", .insufficientAuthorization),
            ("org.gattd.Att.RequestNotSupported", .requestNotSupported),
            ("org.gattd.Att.Unlikely", .unlikely),
            ("org.gattd.Att.Application0x80", .application(0x80)),
            ("org.gattd.Att.Application0x9f", .application(0x9F)),
        ])
    func mapping(name: String, error: GATTError) {
        #expect(HandlerErrors.gattError(named: name) == error)
        #expect(HandlerErrors.name(of: error).lowercased() == name.lowercased())
    }

    @Test("application codes outside 0x80-0x9F and foreign names are not ATT results")
    func refusals() {
        for name in [
            "org.gattd.Att.Application0x7f", "org.gattd.Att.Application0xa0", "org.gattd.Att.Application0x",
            "org.gattd.Att.Application0xzz", "org.gattd.Att.Nope", "org.bluez.Error.Failed", "org.gattd.Att",
        ] {
            #expect(HandlerErrors.gattError(named: name) == nil, "\(name)")
        }
        #expect(HandlerErrors.gattError(named: "org.gattd.Att.Application0X85") == .application(0x85))
    }
}
