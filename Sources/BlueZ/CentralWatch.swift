// SPDX-License-Identifier: MIT

public import DBusKit
public import Logging

/// Watches the adapter gattd serves on for what a program wants to hear about: centrals
/// connecting and disconnecting (bluetoothd's `org.bluez.Device1` objects under the
/// adapter, their `Connected` property) and the adapter's `Powered`.
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
        var name: String?
        var connected = false
    }

    public var onEvent: ((Event) -> Void)?
    private let connection: BusConnection
    private let logger: Logger
    private var adapterPath: ObjectPath?
    private var subscriptions: [SignalSubscription] = []
    private var centrals: [String: Central] = [:]
    private var generation = 0

    public init(connection: BusConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Paths of the centrals connected now.
    public var connectedDevices: [String] { centrals.filter(\.value.connected).map(\.key).sorted() }

    /// The registrar chose `path`: learn the devices bluetoothd has, then follow changes.
    public func adapterAvailable(path: ObjectPath) {
        adapterGone()
        adapterPath = path
        generation += 1
        let attempt = generation
        subscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, interface: BlueZNames.properties, member: "PropertiesChanged",
                arg0: BlueZNames.device
            ) { [unowned self] message in
                guard let device = message.path, device.isDescendant(of: path),
                    let arguments = try? message.arguments(), arguments.count >= 2,
                    let changed = arguments[1].variantDictionaryEntries
                else { return }
                self.update(device.rawValue, Dictionary(changed, uniquingKeysWith: { $1 }))
            })
        subscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, path: path, interface: BlueZNames.properties,
                member: "PropertiesChanged", arg0: BlueZNames.adapter
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count >= 2,
                    let powered = arguments[1].variantDictionaryValue("Powered")?.asBool
                else { return }
                self.onEvent?(.powered(powered))
            })
        subscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, path: BlueZNames.root, interface: BlueZNames.objectManager,
                member: "InterfacesAdded"
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count == 2,
                    let device = arguments[0].asObjectPath, device.isDescendant(of: path),
                    let properties = arguments[1].dictionaryEntries?.first(where: {
                        $0.key.asString == BlueZNames.device
                    })?.value.variantDictionaryEntries
                else { return }
                self.update(device.rawValue, Dictionary(properties, uniquingKeysWith: { $1 }))
            })
        subscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, path: BlueZNames.root, interface: BlueZNames.objectManager,
                member: "InterfacesRemoved"
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count == 2,
                    let device = arguments[0].asObjectPath?.rawValue,
                    arguments[1].asStringArray?.contains(BlueZNames.device) == true
                else { return }
                self.update(device, ["Connected": .bool(false)])
                self.centrals[device] = nil
            })
        // What bluetoothd already has: centrals connected before gattd (re)started are
        // known, not announced.
        connection.call(
            destination: BlueZNames.service, path: BlueZNames.root, interface: BlueZNames.objectManager,
            member: "GetManagedObjects"
        ) { [weak self] result in
            guard let self, attempt == self.generation, case .success(let reply) = result,
                let objects = (try? reply.arguments())?.first?.dictionaryEntries
            else { return }
            for entry in objects {
                let interfaces = entry.value
                guard let device = entry.key.asObjectPath, device.isDescendant(of: path), centrals[device.rawValue] == nil,
                    let properties = interfaces.dictionaryEntries?.first(where: {
                        $0.key.asString == BlueZNames.device
                    })?.value.variantDictionaryEntries
                else { continue }
                let values = Dictionary(properties, uniquingKeysWith: { $1 })
                centrals[device.rawValue] = Central(
                    address: values["Address"]?.asString ?? Self.address(fromPath: device.rawValue),
                    name: values["Name"]?.asString, connected: values["Connected"]?.asBool ?? false)
            }
        }
    }

    /// bluetoothd or the adapter went away: every connected central is disconnected.
    public func adapterGone() {
        generation += 1
        for subscription in subscriptions { subscription.cancel() }
        subscriptions.removeAll()
        for (device, central) in centrals.sorted(by: { $0.key < $1.key }) where central.connected {
            onEvent?(.disconnected(device: device, address: central.address, name: central.name))
        }
        centrals.removeAll()
        adapterPath = nil
    }

    private func update(_ device: String, _ changed: [String: DBusValue]) {
        var central = centrals[device] ?? Central(address: Self.address(fromPath: device))
        if let address = changed["Address"]?.asString { central.address = address }
        if let name = changed["Name"]?.asString { central.name = name }
        let wasConnected = central.connected
        if let connected = changed["Connected"]?.asBool { central.connected = connected }
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

    /// `AA:BB:CC:DD:EE:FF` from `/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF`.
    static func address(fromPath path: String) -> String {
        guard let last = path.split(separator: "/").last, last.hasPrefix("dev_") else { return "" }
        return String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 })
    }
}
