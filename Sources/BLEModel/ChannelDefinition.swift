// SPDX-License-Identifier: MIT

/// One L2CAP LE credit-based channel gattd listens on (the top-level `channels` array):
/// CoreBluetooth's `publishL2CAPChannel` on Linux (docs/channels.md).
public struct ChannelDefinition: Sendable, Equatable {
    /// What the link must have before the kernel lets a central open the channel: the
    /// listener's `BT_SECURITY` level.
    public enum Security: String, CaseIterable, Sendable {
        /// `BT_SECURITY_LOW`: any link, no encryption.
        case none = "none"
        /// `BT_SECURITY_MEDIUM`: an encrypted link (any pairing); CoreBluetooth's
        /// `withEncryption: true`.
        case encrypt = "encrypt"
        /// `BT_SECURITY_HIGH`: encrypted with an authenticated (MITM-protected) key.
        case authenticate = "authenticate"
        /// `BT_SECURITY_FIPS`: authenticated and LE Secure Connections.
        case secure = "secure"

        /// The value of the kernel's `BT_SECURITY` option (`struct bt_security.level`).
        public var kernelLevel: UInt8 {
            switch self {
            case .none: 1
            case .encrypt: 2
            case .authenticate: 3
            case .secure: 4
            }
        }

        public var linkSecurity: LinkSecurity {
            switch self {
            case .none: .open
            case .encrypt: .encrypted
            case .authenticate: .authenticated
            case .secure: .secureConnections
            }
        }

        /// The read flag of the PSM characteristic: the same level as the channel, so a
        /// phone pairs on the ATT error before it opens the channel.
        public var psmReadFlag: CharacteristicFlag {
            switch self {
            case .none: .read
            case .encrypt: .encryptRead
            case .authenticate: .encryptAuthenticatedRead
            case .secure: .secureRead
            }
        }
    }

    /// Unique among the channels; letters, digits, `_` and `-`.
    public var id: String
    /// The PSM asked for (0x80...0xFF); nil: the kernel picks a free one, which gattd keeps
    /// in its state and asks for again after a restart.
    public var psm: UInt16?
    public var security: Security
    /// Id of the service that carries Apple's PSM characteristic for this channel.
    public var service: String
    /// Started per channel with the channel on standard input and output (`program.argv`);
    /// nil: a program registered over the control API takes the channels.
    public var program: [String]?
    /// JSON path in the file (`channels[0]`); empty when built in code.
    public var sourcePath: String

    public init(
        id: String, psm: UInt16? = nil, security: Security = .none, service: String, program: [String]? = nil,
        sourcePath: String = ""
    ) {
        self.id = id
        self.psm = psm
        self.security = security
        self.service = service
        self.program = program
        self.sourcePath = sourcePath
    }

    /// The LE dynamic PSM range: what the kernel hands out for PSM 0 and what gattd may ask
    /// for without `CAP_NET_BIND_SERVICE` (Core Spec Vol 3 Part A §4.22).
    public static let dynamicPSMs: ClosedRange<UInt16> = 0x80...0xFF

    /// Apple's L2CAP PSM characteristic (CoreBluetooth `CBUUIDL2CAPPSMCharacteristicString`):
    /// the PSM as a little-endian UInt16.
    public static let psmCharacteristicUUID = BluetoothUUID(
        high: 0xABDD_3056_28FA_441D, low: 0xA470_55A7_5A52_553A)

    /// The id of the PSM characteristic gattd adds to `service`; the `.` keeps it apart from
    /// every id a definition can write or derive.
    public var psmCharacteristicID: String { "\(service).l2cap-psm" }

    /// The PSM characteristic for `psm`: readable at the channel's level, fixed value.
    public func psmCharacteristic(psm: UInt16) -> CharacteristicDefinition {
        CharacteristicDefinition(
            id: psmCharacteristicID, uuid: Self.psmCharacteristicUUID, flags: [security.psmReadFlag],
            value: [UInt8(psm & 0xFF), UInt8(psm >> 8)], minLength: 2, maxLength: 2, persist: false)
    }

    /// `channel files psm 0x81 (kernel picks), encrypt, PSM characteristic in service dfu, program /usr/bin/x`.
    public var summary: String {
        let number = psm.map { "psm 0x" + String($0, radix: 16) } ?? "psm chosen by the kernel (kept in the state)"
        let taker = program.map { "program \($0[0]) per channel" } ?? "taker registered over the control API"
        return "channel \(id): \(number), security \(security.rawValue), "
            + "PSM characteristic (\(security.psmReadFlag.rawValue)) in service \(service), \(taker)"
    }
}

extension Configuration {
    /// This configuration with the PSM characteristic of each channel in `psms` (channel id
    /// -> PSM the listener got) appended to the channel's service. A channel missing from
    /// `psms` (its socket could not be made) gets none: a phone must not find a PSM nobody
    /// listens on.
    public func addingPSMCharacteristics(_ psms: [String: UInt16]) -> Configuration {
        var result = self
        for channel in channels {
            guard let psm = psms[channel.id],
                let index = result.services.firstIndex(where: { $0.id == channel.service })
            else { continue }
            result.services[index].characteristics.append(channel.psmCharacteristic(psm: psm))
        }
        return result
    }
}
