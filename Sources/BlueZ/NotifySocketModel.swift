// SPDX-License-Identifier: MIT

/// How the bluetoothd gattd serves on shares `AcquireNotify` sockets among centrals
/// (docs/bluez-contract.md, "Sockets"). `AcquireNotify`'s options are the same in every
/// release (`device`, `link`, `mtu`: `append_options` in 5.66 and 5.82 alike), so they
/// cannot tell; the release shows in the properties of bluetoothd's `Adapter1`.
public enum NotifySocketModel: Equatable, Sendable {
    /// Not learned yet: a second socket closes nothing, and no value can be targeted.
    case unknown
    /// One socket per characteristic, shared by every subscriber (up to 5.68; `Adapter1`
    /// without `Manufacturer`, which came in 5.71, so 5.69 and 5.70 are taken for this too).
    case shared
    /// One socket per central, but a datagram may go to every subscriber (5.69 to 5.75);
    /// `Manufacturer` without `Connectable` (5.71 to 5.78) cannot tell 5.75 from 5.76.
    case perCentral
    /// One socket per central, and its datagrams go to that central only (from 5.76;
    /// recognised by `Adapter1.Connectable`, from 5.79).
    case targeted

    /// The model the names of `Adapter1`'s properties show.
    public init(adapterProperties names: Set<String>) {
        if names.contains("Connectable") {
            self = .targeted
        } else if names.contains("Manufacturer") {
            self = .perCentral
        } else {
            self = .shared
        }
    }
}
