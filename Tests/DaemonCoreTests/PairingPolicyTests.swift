// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Testing

@Suite("Pairing policy: bondedOnly and the passkey program")
struct PairingPolicyTests {
    @Test("without bondedOnly every central stays, and nothing about it is asked")
    func noBondedOnly() {
        let policy = PairingPolicy(SecurityDefinition(pairing: .justWorks, bondedOnly: false))
        var asked = false
        let admission = policy.admission(
            bonded: {
                asked = true
                return false
            },
            pairingOpen: {
                asked = true
                return false
            })
        #expect(admission == .admit)
        #expect(!asked)
    }

    @Test("bondedOnly: a bonded central stays whether or not pairing is open")
    func bondedStays() {
        let policy = PairingPolicy(SecurityDefinition(pairing: .justWorks, bondedOnly: true))
        #expect(policy.admission(bonded: { true }, pairingOpen: { false }) == .admit)
        #expect(policy.admission(bonded: { true }, pairingOpen: { true }) == .admit)
    }

    @Test("bondedOnly: a stranger stays to pair while pairing is open, else is disconnected")
    func strangers() {
        let policy = PairingPolicy(SecurityDefinition(pairing: .displayPasskey, bondedOnly: true))
        #expect(policy.admission(bonded: { false }, pairingOpen: { true }) == .admitToPair)
        #expect(policy.admission(bonded: { false }, pairingOpen: { false }) == .disconnect)
    }

    @Test("bondedOnly works without an agent: pairing none disconnects every stranger")
    func bondedOnlyWithoutAgent() {
        let policy = PairingPolicy(SecurityDefinition(pairing: .none, pairable: .never, bondedOnly: true))
        #expect(policy.admission(bonded: { false }, pairingOpen: { false }) == .disconnect)
    }

    @Test("the passkey program gets the passkey, the address and the device path, and its timeout")
    func passkeyLaunch() {
        let program = SecurityDefinition.PasskeyProgram(argv: ["show-passkey", "--big"], timeoutMs: 4_000)
        let policy = PairingPolicy(SecurityDefinition(pairing: .displayPasskey, onPasskey: program))
        let launch = policy.passkeyLaunch(
            passkey: "012345", address: "AA:BB:CC:DD:EE:FF", devicePath: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF")
        #expect(
            launch
                == PairingPolicy.PasskeyLaunch(
                    argv: ["show-passkey", "--big"],
                    environment: [
                        "GATTD_PASSKEY": "012345", "GATTD_DEVICE": "AA:BB:CC:DD:EE:FF",
                        "GATTD_DEVICE_PATH": "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF",
                    ],
                    timeout: .milliseconds(4_000)))
    }

    @Test("no onPasskey: no program")
    func noPasskeyProgram() {
        let policy = PairingPolicy(SecurityDefinition(pairing: .displayPasskey))
        #expect(policy.passkeyLaunch(passkey: "000001", address: "AA", devicePath: "/d") == nil)
    }
}
