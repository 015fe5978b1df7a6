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
/// when the adapter or bluetoothd goes away.
///
/// A central is named by what bluetoothd says, its `Address` and `AddressType` properties:
/// the address it connected from until it bonds, its identity address once bluetoothd has
/// its IRK. The object path is an opaque handle, never read for an address: bluetoothd keeps
/// a phone that bonded over a private address at `dev_<that address>` and only changes its
/// `Address` (docs/bluez-contract.md, "Private addresses"). Every name a program is told
/// is announced first: `connected` with the address, `addressChanged` when a connected
/// central's address changes, and `disconnected` with the address last announced. A
/// `Device1` whose address is not known yet (a change that came before its object) is
/// asked for its properties, and announced once they come.
public final class CentralWatch {
    public enum Event: Equatable, Sendable {
        case connected(device: String, address: String, addressType: String?, name: String?)
        case disconnected(device: String, address: String, addressType: String?, name: String?)
        /// A connected central's `Address` changed (it bonded over a private address, and
        /// bluetoothd now names it by its identity): what it was announced as, and its new name.
        case addressChanged(
            device: String, oldAddress: String, oldAddressType: String?, address: String, addressType: String?,
            name: String?)
        case powered(Bool)
    }

    private struct Central {
        /// bluetoothd's `Address`; nil until known.
        var address: String?
        var addressType: String?
        /// The address and type the last event named while it is connected (nil: none
        /// announced), so its disconnection names what a program was told.
        var announced: (address: String, type: String?)?
        /// Its properties were asked for (its address was not known).
        var asked = false
        var name: String?
        var connected = false
        var paired = false
        /// `Bonded` (bluetoothd 5.67+); nil where bluetoothd has no such property.
        var bonded: Bool?
        var trusted = false
        /// When gattd saw it connect, or learned it was connected (Unix time, seconds).
        var connectedSince: Int64?
        /// When gattd saw it take its current `Address` (a count: larger is later; 0 for
        /// an object found when gattd learned the adapter), so that of two objects with one
        /// address the newer stands for the central.
        var learned = 0
        /// Its address changed from a resolvable private one while gattd followed it: it
        /// bonded over that address since bluetoothd started, so bluetoothd keeps its Service
        /// Changed subscription, and any Service Changed queued while it is away, under that
        /// address (docs/bluez-contract.md §12).
        var bondedOverPrivateAddress = false
        /// The GATT table changed while it was away after bonding that way (`tableChanged`).
        var missedTableChange = false

        /// A bond is kept: `Bonded`, or `Paired` where bluetoothd does not say `Bonded`.
        var isBonded: Bool { bonded ?? paired }
    }

    /// A central bluetoothd keeps a bond with (`gattctl bonds`), one per address.
    public struct Bond: Equatable, Sendable {
        /// The object that stands for it (where bluetoothd keeps two for one address, the
        /// connected one, else the bonded one, else the newer).
        public var device: String
        public var address: String
        /// `public` or `random` (a static random identity), when bluetoothd says.
        public var addressType: String?
        public var name: String?
        public var paired: Bool
        public var bonded: Bool
        public var trusted: Bool
        public var connected: Bool

        public init(
            device: String, address: String, addressType: String? = nil, name: String?, paired: Bool, bonded: Bool,
            trusted: Bool, connected: Bool
        ) {
            self.device = device
            self.address = address
            self.addressType = addressType
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
        /// `public` or `random`, when bluetoothd says.
        public var addressType: String?
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
    /// The last `Central.learned` given.
    private var learnedCount = 0

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

    /// The session chose `path`: learn the devices bluetoothd has from the session's listing
    /// (`BlueZSession.listing`; their changes come as session events).
    private func adapterAvailable(path: ObjectPath) {
        adapterGone()
        // What bluetoothd already has: centrals connected before gattd (re)started are
        // known, not announced.
        var foundConnected: [(String, String)] = []
        for object in session.listing {
            if object.path == path, let adapter = object.interfaces[BlueZNames.adapter] {
                adapterProperties(Array(adapter.keys))
            }
            guard object.path.isDescendant(of: path), centrals[object.path.rawValue] == nil,
                let values = object.interfaces[BlueZNames.device]
            else { continue }
            let connected = values["Connected"]?.asBool ?? false
            var central = Central(
                address: values["Address"]?.asString, addressType: values["AddressType"]?.asString,
                name: values["Name"]?.asString, connected: connected,
                paired: values["Paired"]?.asBool ?? false, bonded: values["Bonded"]?.asBool,
                trusted: values["Trusted"]?.asBool ?? false, connectedSince: connected ? Self.now() : nil)
            // Known, not announced: a program learns it from ListCentrals, and its
            // disconnection names this address.
            if connected, let address = central.address {
                central.announced = (address, central.addressType)
                foundConnected.append((object.path.rawValue, address))
            }
            centrals[object.path.rawValue] = central
        }
        for (device, address) in foundConnected.sorted(by: { $0.0 < $1.0 }) { onFoundConnected?(device, address) }
        let addresses = Set(centrals.values.compactMap { $0.address?.uppercased() })
        for address in addresses.sorted() { reportShared(address) }
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
        for (device, central) in centrals.sorted(by: { $0.key < $1.key }) {
            guard let announced = central.announced else { continue }
            onEvent?(
                .disconnected(device: device, address: announced.address, addressType: announced.type, name: central.name))
        }
        centrals.removeAll()
    }

    private func update(_ device: String, _ changed: [String: DBusValue]) {
        var central = centrals[device] ?? Central()
        var newAddress = false
        if let address = changed["Address"]?.asString {
            newAddress = address.uppercased() != central.address?.uppercased()
            central.address = address
        }
        if newAddress {
            learnedCount += 1
            central.learned = learnedCount
        }
        if let type = changed["AddressType"]?.asString { central.addressType = type }
        if let name = changed["Name"]?.asString { central.name = name }
        if let paired = changed["Paired"]?.asBool { central.paired = paired }
        if let bonded = changed["Bonded"]?.asBool { central.bonded = bonded }
        if let trusted = changed["Trusted"]?.asBool { central.trusted = trusted }
        let wasConnected = central.connected
        if let connected = changed["Connected"]?.asBool { central.connected = connected }
        if central.connected != wasConnected { central.connectedSince = central.connected ? Self.now() : nil }
        if central.address == nil, !central.asked {
            central.asked = true
            ask(device)
        }
        centrals[device] = central
        if central.connected, newAddress || !wasConnected, let address = central.address {
            endStaleLinks(address, keeping: device)
        }
        announce(device)
        if newAddress, let address = central.address { reportShared(address.uppercased(), newer: device) }
    }

    /// A central with `address` has its link on `keeping` now: another object with that
    /// address that still says `Connected` stands for a link that has ended, since one
    /// address has one LE link at a time. bluetoothd before 5.80 leaves the newer object of a
    /// re-paired phone `Connected` when its link ends (it files the end under the older
    /// object, docs/bluez-contract.md §12); gattd takes that link as ended (disconnected,
    /// announced) when the address connects again, so a value for the address goes to the
    /// live link. bluetoothd's own `Connected` for that object, if it ever comes, changes
    /// nothing more.
    private func endStaleLinks(_ address: String, keeping device: String) {
        let key = address.uppercased()
        let stale = centrals.filter { $0.key != device && $0.value.connected && $0.value.address?.uppercased() == key }
        for other in stale.keys.sorted() {
            logger.notice(
                "a central's address connected on another object: its old link is taken as ended",
                metadata: ["address": "\(address)", "device": "\(device)", "ended": "\(other)"])
            centrals[other]?.connected = false
            centrals[other]?.connectedSince = nil
            announce(other)
        }
    }

    /// bluetoothd keeps more than one object with `address` (a phone that paired again
    /// with a new IRK: the new object takes the identity the old one has, bluez/bluez
    /// #1095): says so, once for each object that joins them. gattd removes none of them:
    /// `RemoveDevice` on the older object removes the keys stored for the address and drops
    /// its link, so the newer bond would go with it (docs/bluez-contract.md §12).
    private func reportShared(_ address: String, newer: String? = nil) {
        let sharing = devices(address: address)
        guard sharing.count > 1, let standing = sharing.last else { return }
        logger.notice(
            "central paired again (new IRK): bluetoothd keeps several objects for its address, gattd removes none",
            metadata: [
                "address": "\(address)", "device": "\(newer ?? standing)", "standing": "\(standing)",
                "others": "\(sharing.filter { $0 != standing })",
            ])
    }

    /// The GATT application is about to be registered anew with a changed tree, so bluetoothd
    /// sends Service Changed to every central, or keeps it for a bonded one that is away. It
    /// keeps it under the address the central's subscription was made from: for a central
    /// that bonded over a private address since bluetoothd started that is the private
    /// address, and when the central returns (its link reporting the identity) bluetoothd
    /// finds nothing to send (docs/bluez-contract.md §12). Those away now are logged, and
    /// again when they return. Returns their addresses.
    @discardableResult
    public func tableChanged() -> [String] {
        var away: [String] = []
        for (device, central) in centrals where central.bondedOverPrivateAddress && !central.connected {
            centrals[device]?.missedTableChange = true
            if let address = central.address { away.append(address) }
        }
        guard !away.isEmpty else { return [] }
        away.sort()
        logger.warning(
            """
            the GATT table changes while centrals that bonded over a private address are away: bluetoothd \
            sends them Service Changed when they return only if they enabled it after bonding (it keeps what \
            they enabled before under the private address)
            """,
            metadata: ["addresses": "\(away)"])
        return away
    }

    /// A resolvable private address: random, its two most significant bits 0b01.
    static func isResolvablePrivate(_ address: String) -> Bool {
        guard let first = address.split(separator: ":").first, let byte = UInt8(first, radix: 16) else { return false }
        return byte >> 6 == 0b01
    }

    /// Tells `onEvent` what changed in the name a program knows `device` by: connected
    /// (once its address is known), its address changed while connected, or disconnected
    /// (with the address it was announced with).
    private func announce(_ device: String) {
        guard var central = centrals[device] else { return }
        let event: Event
        switch (central.connected, central.address, central.announced) {
        case (true, let address?, nil):
            event = .connected(device: device, address: address, addressType: central.addressType, name: central.name)
        case (true, let address?, let old?) where old.address != address || old.type != central.addressType:
            event = .addressChanged(
                device: device, oldAddress: old.address, oldAddressType: old.type, address: address,
                addressType: central.addressType, name: central.name)
        case (false, _, let old?):
            event = .disconnected(device: device, address: old.address, addressType: old.type, name: central.name)
        default:
            return
        }
        if case .addressChanged(_, let old, let oldType, _, _, _) = event, oldType == "random",
            Self.isResolvablePrivate(old)
        {
            central.bondedOverPrivateAddress = true
        }
        let missed = central.missedTableChange && central.connected
        if missed { central.missedTableChange = false }
        if case .disconnected = event {
            central.announced = nil
        } else if let address = central.address {
            central.announced = (address, central.addressType)
        }
        centrals[device] = central
        switch event {
        case .connected(_, let address, let type, let name), .disconnected(_, let address, let type, let name):
            logger.info(
                central.connected ? "central connected" : "central disconnected",
                metadata: ["device": "\(device)", "address": "\(address)", "address.type": "\(type ?? "")", "name": "\(name ?? "")"])
        case .addressChanged(_, let old, _, let address, let type, _):
            logger.info(
                "central's address changed",
                metadata: ["device": "\(device)", "address": "\(address)", "address.type": "\(type ?? "")", "old": "\(old)"])
        case .powered:
            break
        }
        if missed, let address = central.address {
            logger.warning(
                """
                a central that bonded over a private address returned after the GATT table changed while it was \
                away: unless it enabled Service Changed after bonding, bluetoothd keeps that for its old address \
                and does not send it, and the central sees the new table only if it checks the Database Hash or \
                discovers again
                """,
                metadata: ["device": "\(device)", "address": "\(address)"])
        }
        onEvent?(event)
    }

    /// A `Device1` whose `Address` gattd has not seen (its change came before its object):
    /// its properties are asked for, so its events can name it.
    private func ask(_ device: String) {
        guard let path = try? ObjectPath(device) else { return }
        let attempt = session.generation
        connection.call(
            destination: BlueZNames.service, path: path, interface: Freedesktop.properties, member: "GetAll",
            arguments: [.string(BlueZNames.device)]
        ) { [weak self] result in
            guard let self, self.session.isCurrent(attempt), self.centrals[device] != nil else { return }
            guard case .success(let reply) = result, let properties = (try? reply.arguments())?.first?.variantDictionaryEntries
            else {
                self.logger.warning(
                    "cannot learn a central's address: its events wait for bluetoothd to name it",
                    metadata: ["device": "\(device)"])
                return
            }
            let values = Dictionary(properties, uniquingKeysWith: { $1 })
            // Only what a signal has not told already.
            var missing: [String: DBusValue] = [:]
            if self.centrals[device]?.address == nil, let address = values["Address"] { missing["Address"] = address }
            if self.centrals[device]?.addressType == nil, let type = values["AddressType"] { missing["AddressType"] = type }
            if self.centrals[device]?.name == nil, let name = values["Name"] { missing["Name"] = name }
            self.update(device, missing)
        }
    }

    /// The centrals bluetoothd keeps a bond (or a pairing) with, one per address. Where
    /// bluetoothd keeps two objects for one address (a phone that paired again with a new
    /// IRK), they are one central, since bluetoothd and the kernel keep keys by address: the
    /// entry names the object that stands for it (the connected one, else the bonded one,
    /// else the newer) and is paired, bonded, trusted or connected when any of them is
    /// (bluetoothd may file the new keys under the older object while the newer carries the link).
    public var bonds: [Bond] {
        var groups: [String: [(device: String, central: Central)]] = [:]
        for (device, central) in centrals {
            guard let address = central.address else { continue }
            groups[address.uppercased(), default: []].append((device, central))
        }
        return groups.values.compactMap { group in
            guard group.contains(where: { $0.central.isBonded || $0.central.paired }),
                let (device, central) = group.max(by: { Self.rank($0.central, $0.device) < Self.rank($1.central, $1.device) })
            else { return nil }
            return Bond(
                device: device, address: central.address ?? "", addressType: central.addressType, name: central.name,
                paired: group.contains { $0.central.paired }, bonded: group.contains { $0.central.isBonded },
                trusted: group.contains { $0.central.trusted }, connected: group.contains { $0.central.connected })
        }.sorted { $0.address < $1.address }
    }

    /// Which of two objects with one address stands for it: connected, then bonded, then
    /// paired, then the newer (the one that took the address later); then the path, so the
    /// choice does not depend on the order of a dictionary.
    private static func rank(_ central: Central, _ device: String) -> (Int, Int, Int, Int, String) {
        (central.connected ? 1 : 0, central.isBonded ? 1 : 0, central.paired ? 1 : 0, central.learned, device)
    }

    /// The centrals connected now, by address.
    /// Paired, bonded and trusted as in `bonds`: where bluetoothd keeps two objects for
    /// the address, the keys may sit on the one not connected.
    public var connected: [Connected] {
        let bonds = Dictionary(self.bonds.map { ($0.address.uppercased(), $0) }, uniquingKeysWith: { first, _ in first })
        return centrals.compactMap { device, central in
            guard central.connected, let address = central.address else { return nil }
            let bond = bonds[address.uppercased()]
            return Connected(
                device: device, address: address, addressType: central.addressType, name: central.name,
                paired: central.paired || bond?.paired == true, bonded: central.isBonded || bond?.bonded == true,
                trusted: central.trusted || bond?.trusted == true, since: central.connectedSince ?? 0)
        }.sorted { $0.address < $1.address }
    }

    /// The device object of the connected central with `address` (any case).
    public func connectedDevice(address: String) -> String? {
        devices(address: address).last.flatMap { centrals[$0]?.connected == true ? $0 : nil }
    }

    /// The address bluetoothd gives the central at `device` now (`Address`), if gattd knows it.
    public func address(device: String) -> String? { centrals[device]?.address }

    private static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec)
    }

    /// Whether bluetoothd keeps a bond with `device`.
    public func isBonded(_ device: String) -> Bool { centrals[device]?.isBonded ?? false }

    /// The device object that stands for the central with `address` (any case), if
    /// bluetoothd knows it: as in `bonds`, the connected one, else the bonded one, else the newer.
    public func device(address: String) -> String? {
        devices(address: address).last
    }

    /// Every device object bluetoothd keeps with `address` (any case; two after a phone
    /// paired again with a new IRK), the one that stands for it last.
    public func devices(address: String) -> [String] {
        let key = address.uppercased()
        return centrals.filter { $0.value.address?.uppercased() == key }
            .sorted { Self.rank($0.value, $0.key) < Self.rank($1.value, $1.key) }.map(\.key)
    }

    /// The device object bluetoothd has for the central with `address` (any case) and
    /// `addressType` (`public`, `random`), as the kernel names it on an L2CAP channel
    /// (after pairing: the identity address, which bluetoothd's `Address` follows while the
    /// object path may keep the first private address). A connected one is preferred.
    public func device(address: String, addressType: String) -> String? {
        let matching = centrals.filter {
            $0.value.address?.uppercased() == address.uppercased() && ($0.value.addressType ?? "public") == addressType
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

}
