// SPDX-License-Identifier: MIT

extension AdvertisingPayload {
    /// One AD structure (length octet, type octet, data) of a packet, or space that
    /// bluetoothd keeps free for one the kernel adds.
    public struct Structure: Sendable, Equatable {
        /// Who puts the structure on air.
        public enum Origin: Sendable, Equatable {
            /// bluetoothd builds it from the advertisement's properties (`src/shared/ad.c`).
            case bluetoothd
            /// The kernel adds it (tx power, adapter name, adapter appearance).
            case kernel
            /// Not sent; bluetoothd subtracts it from the limit (`calc_max_adv_len`).
            case reserved
        }

        /// AD type (`0x03` Complete List of 16-bit Service UUIDs, ...).
        public var type: UInt8
        /// Human name of the structure ("16-bit service UUIDs").
        public var typeName: String
        /// What it carries, for the breakdown (`180d,180f`, `0xffff (2 bytes)`); may be empty.
        public var detail: String
        /// The configuration key it comes from (`serviceUUIDs`, `manufacturerData 0xFFFF`, `includes`).
        public var source: String
        /// Bytes it takes, length and type octets included; the maximum when `isVariable`.
        public var length: Int
        /// Payload bytes the author chose (manufacturer/service data, raw data, the name):
        /// what can be shortened. Zero for fixed-size structures.
        public var payloadLength: Int
        public var origin: Origin
        /// True when the size depends on the adapter (the kernel's copy of its name).
        public var isVariable: Bool

        public init(
            type: UInt8, typeName: String, detail: String = "", source: String, length: Int, payloadLength: Int = 0,
            origin: Origin = .bluetoothd, isVariable: Bool = false
        ) {
            self.type = type
            self.typeName = typeName
            self.detail = detail
            self.source = source
            self.length = length
            self.payloadLength = payloadLength
            self.origin = origin
            self.isVariable = isVariable
        }

        /// `16-bit service UUIDs (180d) 4`, `tx power level (added by the kernel) 3`.
        public var summary: String {
            var text = typeName
            if !detail.isEmpty { text += " " + detail }
            switch origin {
            case .bluetoothd: break
            case .kernel: text += " (added by the kernel)"
            case .reserved: text += " (not sent)"
            }
            return text + " " + (isVariable ? "up to \(length)" : "\(length)")
        }
    }
}
