// SPDX-License-Identifier: MIT
import DBusKit
import Mainloop

/// bluetoothd as gattd sees it, on a private bus: a connection that owns `org.bluez`,
/// serves `org.freedesktop.DBus.ObjectManager` at `/` and exports adapters at
/// `/org/bluez/hciN` with `Adapter1`, `GattManager1` and `LEAdvertisingManager1`.
///
/// Like bluetoothd (docs/bluez-contract.md §1, §8) it reads the application's tree with
/// `GetManagedObjects` and an advertisement's properties with `GetAll` before it answers
/// the registration, refuses a second registration with `AlreadyExists` and an
/// advertisement beyond its instances with `NotPermitted`. Every manager call is recorded.
final class FakeBlueZ {
    /// One call to a manager method, as bluetoothd received it.
    struct Call: Equatable {
        var member: String
        var adapter: String
        var object: String
    }

    /// An object of a registered application, as bluetoothd read it.
    struct TreeObject {
        var path: String
        var interfaces: [String: [String: DBusValue]]
    }

    let loop: EventLoop
    let connection: BusConnection
    private(set) var adapters: [String: FakeAdapter] = [:]
    /// Every manager call, in arrival order.
    var calls: [Call] = []
    /// Manager calls that `events` also lists, with markers tests add (`note`).
    var events: [String] = []

    init(address: String, loop: EventLoop) throws {
        self.loop = loop
        connection = try BusConnection(address: address, loop: loop)
        connection.addObjectManager(at: "/")
    }

    /// The unique name gattd must trust while this fake owns `org.bluez`.
    var uniqueName: String { connection.uniqueName }

    /// Asks for `org.bluez` and waits for the answer; true when this fake is the primary owner.
    @discardableResult
    func claimName() -> Bool {
        var code: UInt32?
        connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "RequestName", arguments: [.string("org.bluez"), .uint32(4)]
        ) { result in
            code = (try? result.get().arguments())?.first?.asUInt32 ?? 0
        }
        loop.run(until: { code != nil }, timeout: .seconds(10))
        return code == 1
    }

    /// Gives up `org.bluez` (bluetoothd exiting) and waits until the bus has done so.
    func releaseName() {
        var done = false
        connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "ReleaseName", arguments: [.string("org.bluez")]
        ) { _ in done = true }
        loop.run(until: { done }, timeout: .seconds(10))
    }

    /// Exports adapter `name` with the managers asked for (an `InterfacesAdded` at `/`).
    @discardableResult
    func addAdapter(
        _ name: String, gatt: Bool = true, advertising: Bool = true, supportedInstances: Int = 5
    ) throws -> FakeAdapter {
        let adapter = FakeAdapter(
            name: name, bluez: self, gatt: gatt, advertising: advertising, supportedInstances: supportedInstances)
        adapters[name] = adapter
        try connection.export(adapter, at: adapter.path)
        return adapter
    }

    /// Takes adapter `name` off the bus (an `InterfacesRemoved` at `/`); its registrations go with it.
    func removeAdapter(_ name: String) {
        guard let adapter = adapters.removeValue(forKey: name) else { return }
        connection.unexport(adapter.path)
    }

    func note(_ event: String) { events.append(event) }

    /// The manager calls named `member`, in order.
    func calls(_ member: String) -> [Call] { calls.filter { $0.member == member } }

    /// Sends `Release()` to advertisement `path` of `owner` as bluetoothd does: NO_REPLY,
    /// after dropping the registration itself.
    func release(advertisement path: ObjectPath, of owner: String, on adapter: String = "hci0") throws {
        if let adapter = adapters[adapter], adapter.advertisements.removeValue(forKey: path.rawValue) != nil {
            adapter.activeInstances -= 1
        }
        let message = try Message.methodCall(
            destination: owner, path: path, interface: "org.bluez.LEAdvertisement1", member: "Release")
        message.noReplyExpected = true
        try connection.send(message)
    }

    /// `LEAdvertisingManager1` of adapter `name` becomes usable: its properties appear and
    /// an `InterfacesAdded` for it goes out (bluetoothd adds it after `Adapter1`, docs/bluez-contract.md §7).
    func announceAdvertisingManager(adapter name: String = "hci0") throws {
        guard let adapter = adapters[name] else { return }
        adapter.advertisingManagerReady = true
        let interfaces = DBusValue.dictionary(
            keySignature: "s", valueSignature: "a{sv}",
            [DBusDictionaryEntry(key: .string("org.bluez.LEAdvertisingManager1"), value: .variantDictionary([]))])
        try connection.emitSignal(
            path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
            arguments: [.objectPath(adapter.path), interfaces])
    }

    /// The kernel lost adapter `name`'s advertisements (a power cycle): none is active any more.
    func dropAdvertisements(adapter name: String = "hci0") {
        guard let adapter = adapters[name] else { return }
        adapter.advertisements.removeAll()
        adapter.activeInstances = 0
    }

    /// Emits `PropertiesChanged(Device1, {Connected: false})` for a central on adapter `name`.
    func disconnect(device: String, adapter name: String = "hci0") throws {
        try connection.emitPropertiesChanged(
            path: objectPath("/org/bluez/\(name)/\(device)"), interface: "org.bluez.Device1",
            changed: [("Connected", .bool(false))])
    }

    /// Records the `PropertiesChanged` signals of advertisement objects (bluetoothd's proxy).
    func recordAdvertisementChanges() -> AdvertisementChanges {
        let changes = AdvertisementChanges()
        changes.subscription = connection.subscribe(
            interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arg0: "org.bluez.LEAdvertisement1"
        ) { [changes] message in
            guard let arguments = try? message.arguments(), arguments.count == 3 else { return }
            changes.signals.append(
                .init(
                    path: message.path?.rawValue ?? "",
                    changed: (arguments[1].variantDictionaryEntries ?? []).map { $0 },
                    invalidated: arguments[2].asStringArray ?? []))
        }
        return changes
    }

    /// Serves `org.bluez.AgentManager1` at `/org/bluez`; its calls are recorded with adapter "".
    func addAgentManager() throws {
        try connection.export(FakeAgentManager(bluez: self), at: "/org/bluez")
    }

    /// Emits `PropertiesChanged(Adapter1, {Powered})` for adapter `name`.
    func setPowered(_ powered: Bool, adapter name: String = "hci0") throws {
        guard let adapter = adapters[name] else { return }
        adapter.powered = powered
        try connection.emitPropertiesChanged(
            path: adapter.path, interface: "org.bluez.Adapter1", changed: [("Powered", .bool(powered))],
            invalidated: [])
    }
}

/// `PropertiesChanged` signals of advertisements, as `FakeBlueZ` received them.
final class AdvertisementChanges {
    struct Signal {
        var path: String
        var changed: [(String, DBusValue)]
        var invalidated: [String]
    }

    var signals: [Signal] = []
    var subscription: SignalSubscription?
}

extension FakeBlueZ {
    /// A process that is not bluetoothd but announces adapters as bluetoothd does.
    final class Impostor {
        let connection: BusConnection

        init(_ connection: BusConnection) { self.connection = connection }

        /// Emits `InterfacesAdded` at `/` for `/org/bluez/<name>` with `GattManager1`.
        func announceAdapter(_ name: String) throws {
            let interfaces = DBusValue.dictionary(
                keySignature: "s", valueSignature: "a{sv}",
                [DBusDictionaryEntry(key: .string("org.bluez.GattManager1"), value: .variantDictionary([]))])
            try connection.emitSignal(
                path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                arguments: [.objectPath(objectPath("/org/bluez/" + name)), interfaces])
        }
    }
}

/// An adapter object of `FakeBlueZ`, with the state of its two managers.
final class FakeAdapter: DBusObject {
    static let adapterInterface = DBusInterface(
        name: "org.bluez.Adapter1",
        properties: [
            DBusProperty("Address", signature: "s"), DBusProperty("Name", signature: "s"),
            DBusProperty("Alias", signature: "s", access: .readwrite), DBusProperty("Powered", signature: "b"),
            DBusProperty("Pairable", signature: "b", access: .readwrite),
            DBusProperty("PairableTimeout", signature: "u", access: .readwrite)
        ])
    static let gattManagerInterface = DBusInterface(
        name: "org.bluez.GattManager1",
        methods: [
            DBusMethod("RegisterApplication", inSignature: "oa{sv}"),
            DBusMethod("UnregisterApplication", inSignature: "o")
        ])
    static let advertisingManagerInterface = DBusInterface(
        name: "org.bluez.LEAdvertisingManager1",
        methods: [
            DBusMethod("RegisterAdvertisement", inSignature: "oa{sv}"),
            DBusMethod("UnregisterAdvertisement", inSignature: "o")
        ],
        properties: [
            DBusProperty("ActiveInstances", signature: "y"), DBusProperty("SupportedInstances", signature: "y"),
            DBusProperty("SupportedIncludes", signature: "as")
        ])

    let name: String
    let path: ObjectPath
    let interfaces: [DBusInterface]
    unowned let bluez: FakeBlueZ
    let supportedInstances: Int
    var activeInstances = 0
    var powered = true
    /// False: `LEAdvertisingManager1`'s properties are missing (the interface is not up yet).
    var advertisingManagerReady = true
    var alias: String
    /// What `Set(Alias)` wrote, in order.
    var aliasWrites: [String] = []
    var pairable = false
    var pairableTimeout: UInt32 = 0
    /// What `Set(Pairable)` and `Set(PairableTimeout)` wrote, in order.
    var pairingWrites: [String] = []

    /// The registered applications' trees by root path, as read at their registration
    /// (one sender: gattd's). bluetoothd takes several applications from one sender at
    /// different paths.
    var applications: [String: [FakeBlueZ.TreeObject]] = [:]
    /// Every registered application's objects together; nil when none is registered.
    var application: [FakeBlueZ.TreeObject]? {
        applications.isEmpty ? nil : applications.keys.sorted().flatMap { applications[$0] ?? [] }
    }
    private var applicationOwners: [String: String] = [:]
    /// Errors the next `RegisterApplication` calls are answered with, first first.
    var registerApplicationErrors: [DBusError] = []
    /// When true, `RegisterApplication` is answered only by `answerHeldRegistrations()`.
    var holdRegistrations = false
    private var heldRegistrations: [() -> Void] = []

    /// Registered advertisements by path, with the properties read at registration.
    var advertisements: [String: [String: DBusValue]] = [:]
    /// Errors the next `RegisterAdvertisement` calls are answered with, first first.
    var registerAdvertisementErrors: [DBusError] = []

    init(name: String, bluez: FakeBlueZ, gatt: Bool, advertising: Bool, supportedInstances: Int) {
        self.name = name
        self.path = objectPath("/org/bluez/" + name)
        self.bluez = bluez
        self.supportedInstances = supportedInstances
        self.alias = "board-" + name
        interfaces =
            [Self.adapterInterface] + (gatt ? [Self.gattManagerInterface] : [])
            + (advertising ? [Self.advertisingManagerInterface] : [])
    }

    var heldRegistrationCount: Int { heldRegistrations.count }

    /// Sends the replies `holdRegistrations` kept back.
    func answerHeldRegistrations() {
        let held = heldRegistrations
        heldRegistrations.removeAll()
        for answer in held { answer() }
    }

    func property(_ name: String, interface: String) -> DBusValue? {
        switch name {
        case "Address": return .string("00:11:22:33:44:55")
        case "Name": return .string("board-" + self.name)
        case "Alias": return .string(alias)
        case "Powered": return .bool(powered)
        case "Pairable": return .bool(pairable)
        case "PairableTimeout": return .uint32(pairableTimeout)
        case "ActiveInstances": return advertisingManagerReady ? .byte(UInt8(activeInstances)) : nil
        case "SupportedInstances":
            return advertisingManagerReady ? .byte(UInt8(supportedInstances - activeInstances)) : nil
        case "SupportedIncludes": return .stringArray(["tx-power", "appearance", "local-name"])
        default: return nil
        }
    }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        switch (name, value) {
        case ("Alias", .string(let text)):
            alias = text
            aliasWrites.append(text)
        case ("Pairable", .bool(let flag)):
            pairable = flag
            pairingWrites.append("Pairable=\(flag)")
        case ("PairableTimeout", .uint32(let seconds)):
            pairableTimeout = seconds
            pairingWrites.append("PairableTimeout=\(seconds)")
        default:
            throw .propertyReadOnly("\(name) is read-only")
        }
    }

    func handle(_ call: MethodCall) {
        let member = call.member ?? ""
        let object = (try? call.arguments())?.first?.asObjectPath?.rawValue ?? ""
        bluez.calls.append(FakeBlueZ.Call(member: member, adapter: name, object: object))
        bluez.events.append(member)
        let sender = call.sender ?? ""
        switch member {
        case "RegisterApplication": registerApplication(call, sender: sender, root: object)
        case "UnregisterApplication":
            guard applicationOwners[object] == sender else {
                call.fail(DBusError(name: "org.bluez.Error.DoesNotExist", message: "Does Not Exist"))
                return
            }
            applicationOwners[object] = nil
            applications[object] = nil
            call.reply()
        case "RegisterAdvertisement": registerAdvertisement(call, sender: sender, path: object)
        case "UnregisterAdvertisement":
            guard advertisements.removeValue(forKey: object) != nil else {
                call.fail(DBusError(name: "org.bluez.Error.DoesNotExist", message: "Does Not Exist"))
                return
            }
            activeInstances -= 1
            call.reply()
        default:
            call.fail(.unknownMethod(member))
        }
    }

    private func registerApplication(_ call: MethodCall, sender: String, root: String) {
        if !registerApplicationErrors.isEmpty {
            call.fail(registerApplicationErrors.removeFirst())
            return
        }
        guard applicationOwners[root] == nil else {
            call.fail(DBusError(name: "org.bluez.Error.AlreadyExists", message: "Already Exists"))
            return
        }
        applicationOwners[root] = sender
        bluez.connection.call(
            destination: sender, path: objectPath(root), interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects"
        ) { [self] result in
            guard case .success(let reply) = result, let objects = (try? reply.arguments())?.first?.dictionaryEntries
            else {
                applicationOwners[root] = nil
                call.fail(DBusError(name: "org.bluez.Error.Failed", message: "Failed to read the application"))
                return
            }
            applications[root] = objects.map { entry in
                var interfaces: [String: [String: DBusValue]] = [:]
                for interface in entry.value.dictionaryEntries ?? [] {
                    var properties: [String: DBusValue] = [:]
                    for (name, value) in interface.value.variantDictionaryEntries ?? [] { properties[name] = value }
                    interfaces[interface.key.asString ?? ""] = properties
                }
                return FakeBlueZ.TreeObject(path: entry.key.asObjectPath?.rawValue ?? "", interfaces: interfaces)
            }
            bluez.events.append("read tree")
            if holdRegistrations {
                heldRegistrations.append { call.reply() }
            } else {
                call.reply()
            }
        }
    }

    private func registerAdvertisement(_ call: MethodCall, sender: String, path: String) {
        if !registerAdvertisementErrors.isEmpty {
            call.fail(registerAdvertisementErrors.removeFirst())
            return
        }
        guard advertisements[path] == nil else {
            call.fail(DBusError(name: "org.bluez.Error.AlreadyExists", message: "Already Exists"))
            return
        }
        guard activeInstances < supportedInstances else {
            call.fail(DBusError(name: "org.bluez.Error.NotPermitted", message: "Maximum advertisements reached"))
            return
        }
        activeInstances += 1
        advertisements[path] = [:]
        bluez.connection.call(
            destination: sender, path: objectPath(path), interface: "org.freedesktop.DBus.Properties",
            member: "GetAll", arguments: [.string("org.bluez.LEAdvertisement1")]
        ) { [self] result in
            guard case .success(let reply) = result,
                let entries = (try? reply.arguments())?.first?.variantDictionaryEntries
            else {
                advertisements[path] = nil
                activeInstances -= 1
                call.fail(DBusError(name: "org.bluez.Error.Failed", message: "Failed to parse advertisement."))
                return
            }
            var properties: [String: DBusValue] = [:]
            for (name, value) in entries { properties[name] = value }
            advertisements[path] = properties
            call.reply()
        }
    }
}

extension [FakeBlueZ.TreeObject] {
    /// The objects that have `interface`.
    func objects(with interface: String) -> [FakeBlueZ.TreeObject] { filter { $0.interfaces[interface] != nil } }

    /// The object with `interface` whose `UUID` is `uuid`.
    func object(_ interface: String, uuid: String) -> FakeBlueZ.TreeObject? {
        first { $0.interfaces[interface]?["UUID"] == .string(uuid) }
    }
}

/// `text` as an object path; "/" when it is not one (the fake never makes such paths).
func objectPath(_ text: String) -> ObjectPath { (try? ObjectPath(text)) ?? "/" }

/// `org.bluez.AgentManager1` of `FakeBlueZ`: accepts every agent, notes its capability.
final class FakeAgentManager: DBusObject {
    let interfaces = [
        DBusInterface(
            name: "org.bluez.AgentManager1",
            methods: [
                DBusMethod("RegisterAgent", inSignature: "os"), DBusMethod("UnregisterAgent", inSignature: "o"),
                DBusMethod("RequestDefaultAgent", inSignature: "o")
            ])
    ]
    unowned let bluez: FakeBlueZ

    init(bluez: FakeBlueZ) { self.bluez = bluez }

    func handle(_ call: MethodCall) {
        let arguments = (try? call.arguments()) ?? []
        let member = call.member ?? ""
        bluez.calls.append(
            FakeBlueZ.Call(member: member, adapter: "", object: arguments.first?.asObjectPath?.rawValue ?? ""))
        if member == "RegisterAgent", arguments.count > 1 { bluez.note("capability " + (arguments[1].asString ?? "")) }
        call.reply()
    }
}

/// A central's `org.bluez.Device1` object under an adapter of `FakeBlueZ`.
final class FakeDevice: DBusObject {
    let interfaces = [
        DBusInterface(
            name: "org.bluez.Device1", methods: [DBusMethod("Disconnect")],
            properties: [
                DBusProperty("Address", signature: "s"), DBusProperty("AddressType", signature: "s"),
                DBusProperty("Name", signature: "s"),
                DBusProperty("Connected", signature: "b"), DBusProperty("Paired", signature: "b"),
                DBusProperty("Bonded", signature: "b"), DBusProperty("Trusted", signature: "b")
            ])
    ]
    let path: ObjectPath
    var address: String
    var addressType = "public"
    var name: String?
    var connected: Bool
    var paired: Bool
    /// `Disconnect` calls gattd made.
    var disconnects = 0

    /// At `dev_<pathAddress>` (bluetoothd's name for it when it first saw it), else `dev_<address>`.
    init(adapter: String, address: String, pathAddress: String? = nil, name: String?, connected: Bool, paired: Bool) {
        self.address = address
        self.path = objectPath("/org/bluez/\(adapter)/dev_" + (pathAddress ?? address).replacing(":", with: "_"))
        self.name = name
        self.connected = connected
        self.paired = paired
    }

    func property(_ name: String, interface: String) -> DBusValue? {
        switch name {
        case "Address": return .string(address)
        case "AddressType": return .string(addressType)
        case "Name": return self.name.map(DBusValue.string)
        case "Connected": return .bool(connected)
        case "Paired", "Bonded": return .bool(paired)
        case "Trusted": return .bool(false)
        default: return nil
        }
    }

    func handle(_ call: MethodCall) {
        if call.member == "Disconnect" { disconnects += 1 }
        call.reply()
    }
}

extension FakeBlueZ {
    /// Exports a central's `Device1` under adapter `adapter` (an `InterfacesAdded` at `/`).
    @discardableResult
    func addDevice(
        _ address: String, name: String? = nil, connected: Bool = true, paired: Bool = false, adapter: String = "hci0",
        pathAddress: String? = nil, addressType: String = "public"
    ) throws -> FakeDevice {
        let device = FakeDevice(
            adapter: adapter, address: address, pathAddress: pathAddress, name: name, connected: connected, paired: paired)
        device.addressType = addressType
        try connection.export(device, at: device.path)
        return device
    }

    /// bluetoothd learned `device`'s identity (it bonded over a private address): `Address`
    /// and `AddressType` change in one `PropertiesChanged`, the path stays, and it is bonded.
    /// `bonded` false: the keys went to another object with that address (a phone that paired
    /// again with a new IRK, where bluetoothd files the new keys under the older object).
    func setIdentity(_ device: FakeDevice, _ address: String, type: String = "public", bonded: Bool = true) throws {
        device.address = address
        device.addressType = type
        try connection.emitPropertiesChanged(
            path: device.path, interface: "org.bluez.Device1",
            changed: [("Address", .string(address)), ("AddressType", .string(type))])
        guard bonded else { return }
        device.paired = true
        try connection.emitPropertiesChanged(
            path: device.path, interface: "org.bluez.Device1", changed: [("Paired", .bool(true)), ("Bonded", .bool(true))])
    }

    /// Flips `Connected` on `device` and says so with `PropertiesChanged(Device1)`.
    func setConnected(_ device: FakeDevice, _ connected: Bool) throws {
        device.connected = connected
        try connection.emitPropertiesChanged(
            path: device.path, interface: "org.bluez.Device1", changed: [("Connected", .bool(connected))])
    }
}
