// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("Flags and GATT errors")
struct FlagAndErrorTests {
    @Test("characteristic flags are exactly BlueZ's spellings")
    func characteristicSpellings() {
        let expected: Set<String> = [
            "broadcast", "read", "write-without-response", "write", "notify", "indicate",
            "authenticated-signed-writes", "extended-properties", "reliable-write", "writable-auxiliaries",
            "encrypt-read", "encrypt-write", "encrypt-notify", "encrypt-indicate", "encrypt-authenticated-read",
            "encrypt-authenticated-write", "encrypt-authenticated-notify", "encrypt-authenticated-indicate",
            "secure-read", "secure-write", "secure-notify", "secure-indicate", "authorize",
        ]
        #expect(Set(CharacteristicFlag.allCases.map(\.rawValue)) == expected)
        #expect(CharacteristicFlag.allCases.count == expected.count)
    }

    @Test("descriptor flags are exactly BlueZ's spellings")
    func descriptorSpellings() {
        #expect(
            DescriptorFlag.allCases.map(\.rawValue) == [
                "read", "write", "encrypt-read", "encrypt-write", "encrypt-authenticated-read",
                "encrypt-authenticated-write", "secure-read", "secure-write", "authorize",
            ])
    }

    @Test("capabilities follow the security variants")
    func capabilities() {
        #expect(CharacteristicFlag.secureRead.allowsRead)
        #expect(!CharacteristicFlag.secureRead.allowsWrite)
        #expect(CharacteristicFlag.encryptAuthenticatedWrite.allowsWrite)
        #expect(CharacteristicFlag.encryptNotify.allowsNotify)
        #expect(CharacteristicFlag.secureIndicate.allowsIndicate)
        #expect(!CharacteristicFlag.writeWithoutResponse.allowsWrite)
        #expect(CharacteristicFlag.writeWithoutResponse.allowsWriteWithoutResponse)
        #expect([CharacteristicFlag.broadcast, .authorize].allowsRead == false)
        #expect([CharacteristicFlag.notify, .encryptRead].allowsRead)
        #expect(DescriptorFlag.secureWrite.allowsWrite && !DescriptorFlag.secureWrite.allowsRead)
    }

    @Test(
        "ATT codes round-trip",
        arguments: [
            (GATTError.readNotPermitted, UInt8(0x02)), (.writeNotPermitted, 0x03), (.invalidOffset, 0x07),
            (.invalidAttributeValueLength, 0x0D), (.insufficientAuthorization, 0x08), (.requestNotSupported, 0x06),
            (.procedureAlreadyInProgress, 0xFE), (.cccImproperlyConfigured, 0xFD), (.unlikely, 0x0E),
            (.application(0x80), 0x80), (.application(0x9F), 0x9F),
        ])
    func attCodes(error: GATTError, code: UInt8) {
        #expect(error.attCode == code)
        #expect(GATTError(attCode: code) == error)
    }

    @Test("codes an application cannot send have no GATTError")
    func unmappable() {
        for code: UInt8 in [0x00, 0x01, 0x05, 0x0F, 0x7F, 0xA0, 0xFC, 0xFF] {
            #expect(GATTError(attCode: code) == nil, "0x\(String(code, radix: 16))")
        }
    }
}
