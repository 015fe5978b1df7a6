// SPDX-License-Identifier: MIT

extension AdvertisingPayload {
    /// AD types bluetoothd 5.66 builds itself and refuses in `Data` (`type_reject_list`
    /// in `src/shared/ad.c`), with their assigned-numbers names.
    public static let typesBlueZGenerates: [UInt8: String] = [
        0x01: "Flags", 0x02: "Incomplete List of 16-bit Service UUIDs", 0x03: "Complete List of 16-bit Service UUIDs",
        0x04: "Incomplete List of 32-bit Service UUIDs", 0x05: "Complete List of 32-bit Service UUIDs",
        0x06: "Incomplete List of 128-bit Service UUIDs", 0x07: "Complete List of 128-bit Service UUIDs",
        0x08: "Shortened Local Name", 0x09: "Complete Local Name", 0x0A: "Tx Power Level", 0x0D: "Class of Device",
        0x0E: "Simple Pairing Hash C-192", 0x0F: "Simple Pairing Randomizer R-192",
        0x10: "Device ID / Security Manager TK Value", 0x11: "Security Manager Out of Band Flags",
        0x12: "Peripheral Connection Interval Range", 0x14: "List of 16-bit Service Solicitation UUIDs",
        0x15: "List of 128-bit Service Solicitation UUIDs", 0x16: "Service Data - 16-bit UUID",
        0x17: "Public Target Address", 0x18: "Random Target Address", 0x19: "Appearance",
        0x1A: "Advertising Interval", 0x1B: "LE Bluetooth Device Address", 0x1C: "LE Role",
        0x1D: "Simple Pairing Hash C-256", 0x1E: "Simple Pairing Randomizer R-256",
        0x1F: "List of 32-bit Service Solicitation UUIDs", 0x20: "Service Data - 32-bit UUID",
        0x21: "Service Data - 128-bit UUID", 0x22: "LE Secure Connections Confirmation Value",
        0x23: "LE Secure Connections Random Value", 0x27: "LE Supported Features",
        0x28: "Channel Map Update Indication", 0x29: "PB-ADV", 0x2A: "Mesh Message", 0x2B: "Mesh Beacon",
        0x3D: "3D Information Data", 0xFF: "Manufacturer Specific Data",
    ]
}
