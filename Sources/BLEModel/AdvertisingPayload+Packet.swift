// SPDX-License-Identifier: MIT

extension AdvertisingPayload {
    /// The AD structures of one legacy packet (advertising data or scan response), in
    /// the order they go on air, with the packet's byte limit.
    public struct Packet: Sendable, Equatable {
        /// "advertising data" or "scan response".
        public var name: String
        public var structures: [Structure]
        /// 31 for legacy advertising.
        public var limit: Int

        public init(name: String, structures: [Structure] = [], limit: Int = AdvertisingPayload.legacyLimit) {
            self.name = name
            self.structures = structures
            self.limit = limit
        }

        /// Bytes used, counting reserved space and the maximum of variable structures.
        public var length: Int { structures.reduce(0) { $0 + $1.length } }
        /// Bytes over `limit`; zero when the packet fits.
        public var overflow: Int { max(0, length - limit) }
        public var fits: Bool { length <= limit }
        /// True when a structure's size depends on the adapter (so `length` is a maximum).
        public var isVariable: Bool { structures.contains(where: \.isVariable) }

        /// `advertising data 27/31 bytes: flags 3, ...` (`scan response 0/31 bytes` when empty).
        public var summary: String {
            let used = (isVariable ? "up to " : "") + "\(length)/\(limit) bytes"
            guard !structures.isEmpty else { return "\(name) \(used)" }
            return "\(name) \(used): " + structures.map(\.summary).joined(separator: ", ")
        }
    }
}
