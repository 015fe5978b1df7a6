// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@Suite("BluetoothUUID")
struct BluetoothUUIDTests {
    @Test(
        "every spelling of the heart-rate UUID is the same UUID",
        arguments: ["180D", "180d", "0x180D", "0X180d", "0000180D", "0x0000180d", "0000180d-0000-1000-8000-00805f9b34fb",
            "0000180D-0000-1000-8000-00805F9B34FB"])
    func spellingsAreEqual(text: String) throws {
        let uuid = try #require(BluetoothUUID(text))
        #expect(uuid == BluetoothUUID(uuid16: 0x180D))
        #expect(uuid.hashValue == BluetoothUUID(uuid16: 0x180D).hashValue)
        #expect(uuid.description == "0000180d-0000-1000-8000-00805f9b34fb")
        #expect(uuid.shortForm == "180d")
        #expect(uuid.uuid16 == 0x180D)
        #expect(uuid.byteWidth == 2)
    }

    @Test("the 128-bit form has every digit in place, lowercase, and parses back to the same UUID")
    func descriptionDigits() throws {
        let uuid = BluetoothUUID(high: 0xFEDC_BA98_7654_3210, low: 0x0F1E_2D3C_4B5A_6978)
        #expect(uuid.description == "fedcba98-7654-3210-0f1e-2d3c4b5a6978")
        #expect(BluetoothUUID(uuid.description) == uuid)
        #expect(BluetoothUUID(high: 0, low: 0).description == "00000000-0000-0000-0000-000000000000")
        #expect(BluetoothUUID(high: .max, low: .max).description == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test("32-bit and 128-bit UUIDs render and size correctly")
    func widths() throws {
        let wide = try #require(BluetoothUUID("0x12345678"))
        #expect(wide.description == "12345678-0000-1000-8000-00805f9b34fb")
        #expect(wide.shortForm == "12345678")
        #expect(wide.uuid16 == nil)
        #expect(wide.byteWidth == 4)
        #expect(wide.littleEndianBytes(width: 4) == [0x78, 0x56, 0x34, 0x12])

        let custom = try #require(BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1"))
        #expect(custom.description == "12345678-1234-5678-1234-56789abcdef1")
        #expect(custom.shortForm == "12345678-1234-5678-1234-56789abcdef1")
        #expect(custom.uuid32 == nil)
        #expect(custom.byteWidth == 16)
        #expect(
            custom.littleEndianBytes(width: 16) == [
                0xF1, 0xDE, 0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12,
            ])
    }

    @Test("a 16-bit UUID can be written at any wider width")
    func widerEncodings() {
        let uuid = BluetoothUUID(uuid16: 0x180F)
        #expect(uuid.littleEndianBytes(width: 2) == [0x0F, 0x18])
        #expect(uuid.littleEndianBytes(width: 4) == [0x0F, 0x18, 0x00, 0x00])
        #expect(
            uuid.littleEndianBytes(width: 16) == [
                0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x0F, 0x18, 0x00, 0x00,
            ])
    }

    @Test(
        "malformed UUIDs are rejected",
        arguments: ["", "18D", "180G", "0x18", "x180D", "00180D", "0000180d00001000800000805f9b34fb",
            "0000180d-0000-1000-8000_00805f9b34fb", "0x0000180d-0000-1000-8000-00805f9b34fb", " 180D"])
    func rejects(text: String) {
        #expect(BluetoothUUID(text) == nil)
    }
}
