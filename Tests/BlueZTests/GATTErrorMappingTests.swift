// SPDX-License-Identifier: MIT

import BLEModel
import DBusKit
import Testing

@testable import BlueZ

/// bluetoothd's `dbus_error_to_att_ecode` as docs/bluez-contract.md §4 describes it, written
/// out independently of gattd's mapping so each row is checked against the contract.
private func bluetoothdATTCode(name: String, message: String, bluezMinor: Int) -> UInt8 {
    switch name {
    case "org.bluez.Error.Failed":
        guard bluezMinor >= 66 else { return 0x80 }
        // strtol(message, &end, 0) must consume the whole message.
        let text = message.lowercased()
        let parsed: Int?
        if text.hasPrefix("0x") {
            parsed = Int(text.dropFirst(2), radix: 16)
        } else {
            parsed = Int(text)
        }
        guard let code = parsed else { return 0x80 }
        return (0x80...0x9F).contains(code) ? UInt8(code) : 0x0E
    case "org.bluez.Error.NotSupported": return 0x06
    case "org.bluez.Error.NotAuthorized": return 0x08
    case "org.bluez.Error.InvalidValueLength": return 0x0D
    case "org.bluez.Error.InvalidOffset": return 0x07
    case "org.bluez.Error.InProgress": return 0xFE
    case "org.bluez.Error.ImproperlyConfigured": return bluezMinor >= 76 ? 0xFD : 0x0E
    default: return 0x0E
    }
}

/// NotPermitted is the one name whose ATT code depends on the operation.
private func bluetoothdATTCode(_ error: DBusError, isWrite: Bool, bluezMinor: Int = 66) -> UInt8 {
    if error.name == "org.bluez.Error.NotPermitted" { return isWrite ? 0x03 : 0x02 }
    return bluetoothdATTCode(name: error.name, message: error.message, bluezMinor: bluezMinor)
}

@Suite("GATTError -> org.bluez.Error: one row of bluetoothd's table each")
struct GATTErrorMappingTests {
    @Test("read not permitted -> NotPermitted -> ATT 0x02")
    func readNotPermitted() {
        let error = GATTError.readNotPermitted.bluezError
        #expect(error.name == "org.bluez.Error.NotPermitted")
        #expect(bluetoothdATTCode(error, isWrite: false) == 0x02)
    }

    @Test("write not permitted -> NotPermitted -> ATT 0x03")
    func writeNotPermitted() {
        let error = GATTError.writeNotPermitted.bluezError
        #expect(error.name == "org.bluez.Error.NotPermitted")
        #expect(bluetoothdATTCode(error, isWrite: true) == 0x03)
    }

    @Test("invalid offset -> InvalidOffset -> ATT 0x07")
    func invalidOffset() {
        let error = GATTError.invalidOffset.bluezError
        #expect(error.name == "org.bluez.Error.InvalidOffset")
        #expect(bluetoothdATTCode(error, isWrite: false) == 0x07)
    }

    @Test("invalid length -> InvalidValueLength -> ATT 0x0D")
    func invalidLength() {
        let error = GATTError.invalidAttributeValueLength.bluezError
        #expect(error.name == "org.bluez.Error.InvalidValueLength")
        #expect(bluetoothdATTCode(error, isWrite: true) == 0x0D)
    }

    @Test("insufficient authorization -> NotAuthorized -> ATT 0x08")
    func notAuthorized() {
        let error = GATTError.insufficientAuthorization.bluezError
        #expect(error.name == "org.bluez.Error.NotAuthorized")
        #expect(bluetoothdATTCode(error, isWrite: false) == 0x08)
    }

    @Test("request not supported -> NotSupported -> ATT 0x06")
    func notSupported() {
        let error = GATTError.requestNotSupported.bluezError
        #expect(error.name == "org.bluez.Error.NotSupported")
        #expect(bluetoothdATTCode(error, isWrite: false) == 0x06)
    }

    @Test("procedure already in progress -> InProgress -> ATT 0xFE")
    func inProgress() {
        let error = GATTError.procedureAlreadyInProgress.bluezError
        #expect(error.name == "org.bluez.Error.InProgress")
        #expect(bluetoothdATTCode(error, isWrite: true) == 0xFE)
    }

    @Test("CCC improperly configured -> ImproperlyConfigured -> 0xFD from 5.76, 0x0E on 5.66")
    func improperlyConfigured() {
        let error = GATTError.cccImproperlyConfigured.bluezError
        #expect(error.name == "org.bluez.Error.ImproperlyConfigured")
        #expect(bluetoothdATTCode(error, isWrite: true, bluezMinor: 76) == 0xFD)
        #expect(bluetoothdATTCode(error, isWrite: true, bluezMinor: 66) == 0x0E)
    }

    @Test("unlikely error -> a name outside the table -> ATT 0x0E on every version")
    func unlikely() {
        let error = GATTError.unlikely.bluezError
        #expect(!error.name.hasPrefix("org.bluez.Error."))
        #expect(bluetoothdATTCode(error, isWrite: false, bluezMinor: 66) == 0x0E)
        #expect(bluetoothdATTCode(error, isWrite: false, bluezMinor: 50) == 0x0E)
    }

    @Test("application errors 0x80-0x9F travel as Failed with the code as message", arguments: Array(UInt8(0x80)...UInt8(0x9F)))
    func applicationErrors(code: UInt8) {
        let error = GATTError.application(code).bluezError
        #expect(error.name == "org.bluez.Error.Failed")
        #expect(bluetoothdATTCode(error, isWrite: true) == code)
    }

    @Test("every GATTError reaches bluetoothd as the ATT code it stands for (5.76 table)")
    func everyCaseRoundTrips() {
        let all: [(GATTError, Bool)] = [
            (.readNotPermitted, false), (.writeNotPermitted, true), (.invalidOffset, false),
            (.invalidAttributeValueLength, true), (.insufficientAuthorization, false),
            (.requestNotSupported, false), (.procedureAlreadyInProgress, false),
            (.cccImproperlyConfigured, true), (.unlikely, false), (.application(0x80), true), (.application(0x9F), false),
        ]
        for (error, isWrite) in all {
            #expect(bluetoothdATTCode(error.bluezError, isWrite: isWrite, bluezMinor: 76) == error.attCode, "\(error)")
        }
    }
}
