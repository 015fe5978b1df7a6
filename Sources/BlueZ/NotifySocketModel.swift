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

    /// Why a value cannot be sent to chosen centrals under this model.
    var untargetableReason: String {
        switch self {
        case .unknown: "gattd has not learned yet how bluetoothd shares its sockets"
        case .shared:
            "bluetoothd shares one socket among all subscribers (taken for BlueZ before 5.71), so a value on it reaches every one"
        case .perCentral:
            """
            this bluetoothd (BlueZ 5.71 to 5.78) cannot be told apart from releases before 5.76, \
            which send a socket's value to every subscriber
            """
        case .targeted: "bluetoothd can target centrals"
        }
    }
}

/// Why `GattApplication.send(_:value:to:)` sent nothing, or not to every central named.
public enum TargetRefusal: Error, Equatable, Sendable {
    /// No central is subscribed to the characteristic.
    case notSubscribed
    /// The characteristic is notified with `PropertiesChanged`, which bluetoothd sends to
    /// every subscriber.
    case signalPath
    /// bluetoothd cannot send a socket's value to one central only.
    case untargetable(NotifySocketModel)
    /// This central (an address) has no socket of its own for the characteristic.
    case noSocket(String)
    /// Sent to the others; these did not get it (address and why).
    case notSent([String])

    public func message(id: String) -> String {
        switch self {
        case .notSubscribed: "no central is subscribed to \(id)"
        case .signalPath:
            """
            \(id) is notified with PropertiesChanged (the signal path), which bluetoothd sends to every \
            subscriber: only an acquireNotify characteristic can reach chosen centrals
            """
        case .untargetable(let model): "\(id) cannot reach chosen centrals: \(model.untargetableReason)"
        case .noSocket(let address): "\(address) is not subscribed to \(id) through a socket of its own"
        case .notSent(let missed): "\(id): not sent to " + missed.joined(separator: ", ")
        }
    }
}
