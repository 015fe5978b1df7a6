// SPDX-License-Identifier: MIT

/// A validated gattd configuration (the JSON service definition, format version 1).
///
/// Every id is set: absent ids in the file are derived (see config/README.md, "Ids").
/// Values built by `ConfigurationLoader` satisfy every rule of `Configuration+Validation`;
/// values built by hand are not checked.
public struct Configuration: Sendable, Equatable {
    /// Format version; always 1.
    public var version: Int
    /// Adapter name such as `hci0`; nil means the first adapter BlueZ reports.
    public var adapter: String?
    /// `Adapter1.Alias` to set, which bluetoothd serves as the GAP Device Name (0x2A00).
    public var alias: String?
    /// Services in file order; register them in `servicesInRegistrationOrder`.
    public var services: [ServiceDefinition]
    public var advertisements: [AdvertisementDefinition]
    /// Pairing, the pairing window and bonded-only (`security`; absent: no pairing).
    public var security: SecurityDefinition
    /// L2CAP LE credit-based channels (`channels`; docs/channels.md).
    public var channels: [ChannelDefinition]

    public init(
        version: Int = 1, adapter: String? = nil, alias: String? = nil, services: [ServiceDefinition],
        advertisements: [AdvertisementDefinition] = [], security: SecurityDefinition = SecurityDefinition(),
        channels: [ChannelDefinition] = []
    ) {
        self.version = version
        self.adapter = adapter
        self.alias = alias
        self.services = services
        self.advertisements = advertisements
        self.security = security
        self.channels = channels
    }
}
