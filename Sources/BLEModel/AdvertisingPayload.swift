// SPDX-License-Identifier: MIT

/// The legacy advertising data and scan response that bluetoothd 5.66 and the kernel
/// build from one advertisement, structure by structure, so a config can be refused
/// before bluetoothd answers "Failed to parse advertisement." (docs/bluez-contract.md §8).
///
/// The accounting follows `src/shared/ad.c` (`bt_ad_generate`) and `src/advertising.c`
/// (`generate_adv_data`, `generate_scan_rsp`, `calc_max_adv_len`) of BlueZ 5.66:
/// advertising data = service UUID lists (16-, 32-, 128-bit), solicit UUID lists,
/// manufacturer data, service data, [the name, only when connectable with a secondary
/// channel], appearance, raw `data`, Flags (bluetoothd keeps it with the raw data, so it
/// comes last), then the kernel's TX power; bluetoothd also keeps 4 bytes free for the
/// kernel's appearance when `includes` has "appearance". The name goes to the scan
/// response as Complete Local Name, or Shortened Local Name cut to fit 31 bytes.
public struct AdvertisingPayload: Sendable, Equatable {
    /// Bytes in a legacy advertising or scan response packet.
    public static let legacyLimit = 31

    public var advertisingData: Packet
    /// Empty when there is no scan response (connectable with a secondary channel).
    public var scanResponse: Packet
    /// Problems bluetoothd refuses regardless of length ("data" of a type it generates).
    public var refusals: [String]
    /// Things that depend on the adapter or the running BlueZ, worth telling the author.
    public var notes: [String]

    public init(advertisingData: Packet, scanResponse: Packet, refusals: [String] = [], notes: [String] = []) {
        self.advertisingData = advertisingData
        self.scanResponse = scanResponse
        self.refusals = refusals
        self.notes = notes
    }

    /// True when both packets fit and bluetoothd would accept every structure.
    public var fits: Bool { advertisingData.fits && scanResponse.fits && refusals.isEmpty }

    /// `advertising data 27/31 bytes: ...; scan response 12/31 bytes: ...`
    public var summary: String { advertisingData.summary + "; " + scanResponse.summary }
}
