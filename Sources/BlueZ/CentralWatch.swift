// SPDX-License-Identifier: MIT

public import DBusKit
import Glibc
public import Logging

/// Follows the adapter gattd serves on for what a program wants to hear about: centrals
/// connecting and disconnecting (bluetoothd's `org.bluez.Device1` objects under the
/// adapter, their `Connected` property) and the adapter's `Powered`, as the
/// `BlueZSession` reports them (`handle(_:)`).
///
/// bluetoothd creates a `Device1` for every central that connects (`InterfacesAdded`, with
/// `Connected` true) or flips `Connected` on one it knows (a bonded central); a removed
/// `Device1` that was connected counts as disconnected, and so does every connected central
/// when the adapter or bluetoothd goes away. The central's address is the `Address`
/// property (or, failing that, read from the object path); its name is `Name` when
/// bluetoothd knows it.
public final class CentralWatch {
    public enum Event: Equatable, Sendable {
        case connected(device: String, address: String, name: String?)
        case disconnected(device: String, address: String, name: String?)
        case powered(Bool)
    }

    private struct Central {
        var address: String
        /// `AddressType`: `public` or `random` (nil until bluetoothd said).
        var addressType: String?
        var name: String?
        var connected = false
        var paired = false
        /// `Bonded` (bluetoothd 5.67+); nil where bluetoothd has no such property.
        var bonded: Bool?
        var trusted = false
        /// When gattd saw it connect, or learned it was connected (Unix time, seconds).
        var connectedSince: Int64?

        /// A bond is kept: `Bonded`, or `Paired` where bluetoothd does not say `Bonded`.
        var isBonded: Bool { bonded ?? paired }
    }

    /// A central bluetoothd keeps a bond with (`gattctl bonds`).
    public struct Bond: Equatable, Sendable {
        public var device: String
        public var address: String
        public var name: String?
        public var paired: Bool
        public var bonded: Bool
        public var trusted: Bool
        public var connected: Bool

        public init(
            device: String, address: String, name: String?, paired: Bool, bonded: Bool, trusted: Bool,
            connected: Bool
        ) {
            self.device = device
            self.address = address
            self.name = name
            self.paired = paired
            self.bonded = bonded
            self.trusted = trusted
            self.connected = connected
        }
    }

    /// A connected central (`gattctl centrals`).
    public struct Connected: Equatable, Sendable {
        public var device: String
        public var address: String
        public var name: String?
        public var paired: Bool
        public var bonded: Bool
        public var trusted: Bool
        /// When gattd saw it connect, or learned it was connected (Unix time, seconds).
        public var since: Int64
    }

    public var onEvent: ((Event) -> Void)?
    /// A central found already connected when gattd learns the adapter's devices (gattd
    /// or bluetoothd started while it was connected): not announced as `.connected`, but
    /// a policy about who may stay connected (`bondedOnly`) must see it.
    public var onFoundConnected: ((_ device: String, _ address: String) -> Void)?
    private let connection: BusConnection
    private let session: BlueZSession
    private let logger: Logger
    private var centrals: [String: Central] = [:]

    public init(connection: BusConnection, session: BlueZSession, logger: Logger) {
        self.connection = connection
        self.session = session
        self.logger = logger
    }

    /// Paths of the centrals connected now.
    public var connectedDevices: [String] { centrals.filter(\.value.connected).map(\.key).sorted() }

    /// Follows the session: learns the devices of the adapter chosen, then their changes.
    public func handle(_ event: BlueZSession.Event) {
        switch event {
        case .adapterAvailable(let adapter):
            adapterAvailable(path: adapter.path)
        case .adapterGone, .vanished:
            adapterGone()
        case .adapterProperties(let changed):
            adapterProperties(Array(changed.keys))
        case .powered(let powered):
            onEvent?(.powered(powered))
        case .interfacesAdded(let device, let interfaces):
            guard let properties = interfaces[BlueZNames.device] else { return }
            update(device.rawValue, properties)
        case .interfacesRemoved(let device, let interfaces):
            guard interfaces.contains(BlueZNames.device) else { return }
            update(device.rawValue, ["Connected": .bool(false)])
            centrals[device.rawValue] = nil
        case .deviceChanged(let device, let changed):
            update(device.rawValue, changed)
        case .absent, .appeared, .noAdapter:
            break
        }
    }

    /// The session chose `path`: learn the devices bluetoothd has (its changes come as
    /// session events).
    private func adapterAvailable(path: ObjectPath) {
        adapterGone()
        let attempt = session.generation
        // What bluetoothd already has: centrals connected before gattd (re)started are
        // known, not announced.
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.root, interface: Freedesktop.objectManager,
            member: Freedesktop.getManagedObjects
        ) { [weak self] result in
            guard let self, self.session.isCurrent(attempt) else { return }
            guard case .success(let reply) = result, let objects = (try? reply.arguments())?.first?.dictionaryEntries
            else {
                if case .failure(let error) = result {
                    self.logger.error(
                        "cannot learn the centrals bluetoothd has; those connected now are not checked",
                        metadata: ["error": "\(error.name): \(error.message)"])
                }
                return
            }
            var foundConnected: [(String, String)] = []
            for entry in objects {
                let interfaces = entry.value
                if entry.key.asObjectPath == path,
                    let adapter = interfaces.dictionaryEntries?.first(where: { $0.key.asString == BlueZNames.adapter })?
                        .value.variantDictionaryEntries
                {
                    adapterProperties(adapter.map(\.0))
                }
                guard let device = entry.key.asObjectPath, device.isDescendant(of: path), centrals[device.rawValue] == nil,
                    let properties = interfaces.dictionaryEntries?.first(where: {
                        $0.key.asString == BlueZNames.device
                    })?.value.variantDictionaryEntries
                else { continue }
                let values = Dictionary(properties, uniquingKeysWith: { $1 })
                let connected = values["Connected"]?.asBool ?? false
                centrals[device.rawValue] = Central(
                    address: values["Address"]?.asString ?? Self.address(fromPath: device.rawValue),
                    addressType: values["AddressType"]?.asString, name: values["Name"]?.asString, connected: values["Connected"]?.asBool ?? false,
                    paired: values["Paired"]?.asBool ?? false, bonded: values["Bonded"]?.asBool,
                    trusted: values["Trusted"]?.asBool ?? false, connectedSince: connected ? Self.now() : nil)
                if let central = centrals[device.rawValue], central.connected {
                    foundConnected.append((device.rawValue, central.address))
                }
            }
            for (device, address) in foundConnected.sorted(by: { $0.0 < $1.0 }) { onFoundConnected?(device, address) }
        }
    }

    /// How bluetoothd shares notify sockets, from the names of the adapter's properties
    /// (`NotifySocketModel`); `.unknown` until they are read and after the adapter left.
    public private(set) var notifySocketModel: NotifySocketModel = .unknown {
        didSet { if notifySocketModel != oldValue { onNotifySocketModel?(notifySocketModel) } }
    }
    public var onNotifySocketModel: ((NotifySocketModel) -> Void)?
    private var adapterPropertyNames: Set<String> = []

    private func adapterProperties(_ names: [String]) {
        adapterPropertyNames.formUnion(names)
        notifySocketModel = NotifySocketModel(adapterProperties: adapterPropertyNames)
    }

    /// bluetoothd or the adapter went away: every connected central is disconnected.
    public func adapterGone() {
        adapterPropertyNames = []
        notifySocketModel = .unknown
        for (device, central) in centrals.sorted(by: { $0.key < $1.key }) where central.connected {
            onEvent?(.disconnected(device: device, address: central.address, name: central.name))
        }
        centrals.removeAll()
    }

    private func update(_ device: String, _ changed: [String: DBusValue]) {
        var central = centrals[device] ?? Central(address: Self.address(fromPath: device))
        if let address = changed["Address"]?.asString { central.address = address }
        if let type = changed["AddressType"]?.asString { central.addressType = type }
        if let name = changed["Name"]?.asString { central.name = name }
        if let paired = changed["Paired"]?.asBool { central.paired = paired }
        if let bonded = changed["Bonded"]?.asBool { central.bonded = bonded }
        if let trusted = changed["Trusted"]?.asBool { central.trusted = trusted }
        let wasConnected = central.connected
        if let connected = changed["Connected"]?.asBool { central.connected = connected }
        if central.connected != wasConnected { central.connectedSince = central.connected ? Self.now() : nil }
        centrals[device] = central
        guard central.connected != wasConnected else { return }
        logger.info(
            central.connected ? "central connected" : "central disconnected",
            metadata: ["device": "\(device)", "address": "\(central.address)", "name": "\(central.name ?? "")"])
        onEvent?(
            central.connected
                ? .connected(device: device, address: central.address, name: central.name)
                : .disconnected(device: device, address: central.address, name: central.name))
    }

    /// The centrals bluetoothd keeps a bond (or a pairing) with, by address.
    public var bonds: [Bond] {
        centrals.filter { $0.value.isBonded || $0.value.paired }.map { device, central in
            Bond(
                device: device, address: central.address, name: central.name, paired: central.paired,
                bonded: central.isBonded, trusted: central.trusted, connected: central.connected)
        }.sorted { $0.address < $1.address }
    }

    /// The centrals connected now, by address.
    public var connected: [Connected] {
        centrals.filter(\.value.connected).map { device, central in
            Connected(
                device: device, address: central.address, name: central.name, paired: central.paired,
                bonded: central.isBonded, trusted: central.trusted, since: central.connectedSince ?? 0)
        }.sorted { $0.address < $1.address }
    }

    /// The device object of the connected central with `address` (any case).
    public func connectedDevice(address: String) -> String? {
        centrals.first { $0.value.connected && $0.value.address.uppercased() == address.uppercased() }?.key
    }

    private static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec)
    }

    /// Whether bluetoothd keeps a bond with `device`.
    public func isBonded(_ device: String) -> Bool { centrals[device]?.isBonded ?? false }

    /// The device object of the central with `address` (any case), if bluetoothd knows it.
    public func device(address: String) -> String? {
        centrals.first { $0.value.address.uppercased() == address.uppercased() }?.key
    }

    /// The device object bluetoothd has for the central with `address` (any case) and
    /// `addressType` (`public`, `random`), as the kernel names it on an L2CAP channel
    /// (after pairing: the identity address, which bluetoothd's `Address` follows while the
    /// object path may keep the first private address). A connected one is preferred.
    public func device(address: String, addressType: String) -> String? {
        let matching = centrals.filter {
            $0.value.address.uppercased() == address.uppercased() && ($0.value.addressType ?? "public") == addressType
        }
        return (matching.first { $0.value.connected } ?? matching.first)?.key
    }

    /// Removes `device` and its keys from bluetoothd (`Adapter1.RemoveDevice`); a connected
    /// central is disconnected by it.
    public func remove(device: String, completion: @escaping (DBusError?) -> Void) {
        guard let adapterPath = session.adapter?.path, let path = try? ObjectPath(device) else {
            return completion(DBusError(name: BlueZError.doesNotExist, message: "no adapter"))
        }
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.adapter, member: "RemoveDevice",
            arguments: [.objectPath(path)]
        ) { result in
            if case .failure(let error) = result { return completion(error) }
            completion(nil)
        }
    }

    /// Drops the link to `device` (`Device1.Disconnect`).
    public func disconnect(device: String, completion: @escaping (DBusError?) -> Void) {
        guard let path = try? ObjectPath(device) else {
            return completion(DBusError(name: BlueZError.doesNotExist, message: "bad device path"))
        }
        connection.call(
            destination: BlueZNames.service, path: path, interface: BlueZNames.device, member: "Disconnect"
        ) { result in
            if case .failure(let error) = result { return completion(error) }
            completion(nil)
        }
    }

    /// `AA:BB:CC:DD:EE:FF` from `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
    static func address(fromPath path: String) -> String {
        guard let last = path.split(separator: "/").last, last.hasPrefix("dev_") else { return "" }
        return String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 })
    }
}
