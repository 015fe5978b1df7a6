// SPDX-License-Identifier: MIT

public import BLEModel
public import BlueZ
public import DBusKit
public import DaemonCore

/// What the control API needs of the BlueZ side, given to `ControlManager` at `init`:
/// advertising, the pairing window, the centrals and their bonds, and the sockets
/// bluetoothd acquired (their counts, who is subscribed through them, values sent to
/// chosen centrals). A part that is nil is not there (no advertiser; gattd does not
/// pair), and the methods that need it refuse with the reason.
public struct ControlPort {
    /// Switching and changing advertisements, and where each stands.
    public struct Advertising {
        /// Replaces advertisement `id`'s definition; the problems that kept it from being
        /// applied, empty when applied (`Advertiser.update`).
        public var update: (_ id: String, _ definition: AdvertisementDefinition) -> [String]
        /// Every advertisement's state, by id, in configuration order.
        public var states: () -> [(id: String, state: Advertiser.State)]

        public init(
            update: @escaping (String, AdvertisementDefinition) -> [String],
            states: @escaping () -> [(id: String, state: Advertiser.State)]
        ) {
            self.update = update
            self.states = states
        }

        /// The daemon's advertiser.
        public init(_ advertiser: Advertiser) {
            self.init(
                update: { [unowned advertiser] in advertiser.update(id: $0, definition: $1) },
                states: { [unowned advertiser] in advertiser.states })
        }
    }

    /// The pairing window (`security.pairable`).
    public struct Window {
        public var isOpen: () -> Bool
        /// Whole seconds until it closes; nil when closed or unlimited.
        public var secondsLeft: () -> Int?
        /// Opens it for the seconds given; the reason when refused.
        public var open: (_ seconds: Int) -> String?

        public init(
            isOpen: @escaping () -> Bool, secondsLeft: @escaping () -> Int?, open: @escaping (Int) -> String?
        ) {
            self.isOpen = isOpen
            self.secondsLeft = secondsLeft
            self.open = open
        }

        public init(_ window: PairingWindow) {
            self.init(
                isOpen: { [unowned window] in window.isOpen },
                secondsLeft: { [unowned window] in window.secondsLeft },
                open: { [unowned window] in window.open(seconds: $0) })
        }
    }

    /// The centrals bluetoothd knows on the adapter, the connected ones, and their bonds.
    public struct Centrals {
        public var bonds: () -> [CentralWatch.Bond]
        /// The device objects bluetoothd keeps with an address (any case), the one that
        /// stands for it last (two after a phone paired again with a new IRK).
        public var devices: (_ address: String) -> [String]
        /// The address bluetoothd gives a device object now (`Address`), if known.
        public var address: (_ device: String) -> String?
        /// Has bluetoothd forget a device and its keys; the error, or nil once done.
        public var remove: (_ device: String, _ completion: @escaping (DBusError?) -> Void) -> Void
        /// The centrals connected now.
        public var connected: () -> [CentralWatch.Connected]
        /// The device object of the connected central with an address (any case), if any.
        public var connectedDevice: (_ address: String) -> String?
        /// Drops the link to a device; the error, or nil once done.
        public var disconnect: (_ device: String, _ completion: @escaping (DBusError?) -> Void) -> Void

        public init(
            bonds: @escaping () -> [CentralWatch.Bond], devices: @escaping (String) -> [String],
            address: @escaping (String) -> String? = { _ in nil },
            remove: @escaping (String, @escaping (DBusError?) -> Void) -> Void,
            connected: @escaping () -> [CentralWatch.Connected], connectedDevice: @escaping (String) -> String?,
            disconnect: @escaping (String, @escaping (DBusError?) -> Void) -> Void
        ) {
            self.bonds = bonds
            self.devices = devices
            self.address = address
            self.remove = remove
            self.connected = connected
            self.connectedDevice = connectedDevice
            self.disconnect = disconnect
        }

        public init(_ centrals: CentralWatch) {
            self.init(
                bonds: { [unowned centrals] in centrals.bonds },
                devices: { [unowned centrals] in centrals.devices(address: $0) },
                address: { [unowned centrals] in centrals.address(device: $0) },
                remove: { [unowned centrals] in centrals.remove(device: $0, completion: $1) },
                connected: { [unowned centrals] in centrals.connected },
                connectedDevice: { [unowned centrals] in centrals.connectedDevice(address: $0) },
                disconnect: { [unowned centrals] in centrals.disconnect(device: $0, completion: $1) })
        }
    }

    /// Numeric comparisons waiting for a person's decision (`ConfirmPairing`/`RejectPairing`).
    public struct Confirmations {
        /// Decides the confirmation of the central at an address (nil: the only one
        /// waiting); what was decided, or why nothing was.
        public var decide:
            (_ address: String?, _ decision: PendingConfirmations.Decision) -> Result<
                PendingConfirmations.Pending, PendingConfirmations.Refusal
            >

        public init(
            decide: @escaping (String?, PendingConfirmations.Decision) -> Result<
                PendingConfirmations.Pending, PendingConfirmations.Refusal
            >
        ) {
            self.decide = decide
        }

        public init(_ confirmations: PendingConfirmations) {
            self.init(decide: { [unowned confirmations] in confirmations.decide(address: $0, $1) })
        }
    }

    public var advertising: Advertising?
    /// The security settings served (`security`).
    public var security: SecurityDefinition
    /// Nil when gattd does not pair.
    public var pairingWindow: Window?
    public var centrals: Centrals?
    /// Nil unless gattd pairs by numeric comparison.
    public var confirmations: Confirmations?
    /// How many notify and write sockets bluetoothd holds for a characteristic (the GATT
    /// application's `AcquireNotify`/`AcquireWrite` sockets); nil: none are ever counted.
    public var acquiredSockets: ((String) -> (notify: Int, write: Int))?
    /// Sends a value to chosen centrals only (`GattApplication.send(_:value:to:)`), each
    /// named by its address and found by its device object; nil: no centrals can be chosen.
    public var sendToCentrals: ((Attribute, [UInt8], [(address: String, device: String)]) -> Result<Void, TargetRefusal>)?
    /// The characteristics each central is subscribed to through a socket of its own, by
    /// device path (`ListCentrals`); nil or a nil answer: not known.
    public var centralSubscriptions: (() -> [String: [String]]?)?
    /// The characteristics' value handles as bluetoothd has them (`ListCharacteristics`);
    /// nil: not known.
    public var characteristicHandles: (() -> [String: UInt16])?

    public init(
        advertising: Advertising? = nil, security: SecurityDefinition = SecurityDefinition(),
        pairingWindow: Window? = nil, centrals: Centrals? = nil,
        acquiredSockets: ((String) -> (notify: Int, write: Int))? = nil,
        sendToCentrals: ((Attribute, [UInt8], [(address: String, device: String)]) -> Result<Void, TargetRefusal>)? = nil,
        centralSubscriptions: (() -> [String: [String]]?)? = nil,
        characteristicHandles: (() -> [String: UInt16])? = nil, confirmations: Confirmations? = nil
    ) {
        self.advertising = advertising
        self.security = security
        self.pairingWindow = pairingWindow
        self.centrals = centrals
        self.acquiredSockets = acquiredSockets
        self.sendToCentrals = sendToCentrals
        self.centralSubscriptions = centralSubscriptions
        self.characteristicHandles = characteristicHandles
        self.confirmations = confirmations
    }
}

extension ControlPort {
    /// The daemon's port: every part from the peripheral (advertising, centrals, the
    /// application's sockets and handles) and from `pairing` (the window and the numeric
    /// comparisons, nil when gattd does not pair).
    public init(_ peripheral: Peripheral, security: SecurityDefinition, pairing: Pairing) {
        let application = peripheral.application
        self.init(
            advertising: Advertising(peripheral.advertiser), security: security,
            pairingWindow: pairing.window.map(Window.init), centrals: Centrals(peripheral.centrals),
            acquiredSockets: { [unowned application] id in application.acquiredSockets(of: id) },
            sendToCentrals: { [unowned application] attribute, value, targets in
                application.send(attribute, value: value, to: targets)
            },
            centralSubscriptions: { [unowned application] in application.centralSubscriptions() },
            characteristicHandles: { [unowned application] in application.currentHandles.characteristics },
            confirmations: pairing.confirmations.map(Confirmations.init))
    }
}
