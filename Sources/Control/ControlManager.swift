// SPDX-License-Identifier: MIT

public import BLEModel
import BlueZ
import ControlAPI
public import DBusKit
public import DaemonCore
public import Logging

/// `org.gattd.Manager1` at `/org/gattd`: the control API other programs on the board use
/// to read and set values, watch writes and changes, and switch advertisements
/// (docs/control-api.md).
///
/// - Access control is the bus policy (systemd/org.gattd.conf): any caller the bus lets
///   through is served. The GATT objects keep accepting only `org.bluez`'s owner.
/// - `start()` exports the object and asks for `org.gattd` without waiting; if the name is
///   taken or refused, the object is removed again and gattd serves GATT without it.
/// - `SetValue` goes through `RequestService.set(_:to:completion:)`, DaemonCore's write
///   pipeline: a subscribed central is notified by the same path as a value-source tick,
///   and its reply waits for the state file as a central's write does.
/// - Lives on the loop thread, like everything it touches.
public final class ControlManager: DBusObject {
    /// Where the claim on `org.gattd` stands.
    public enum NameState: Equatable, Sendable {
        case notStarted
        case requesting
        /// gattd owns `org.gattd`; the API is served.
        case owned
        /// Another process owns it or the bus refused it; the API is not served.
        case unavailable(String)
    }

    let connection: BusConnection
    /// DaemonCore's request pipeline; its database and persistence are the ones served.
    let service: RequestService
    var database: AttributeDatabase { service.runtime.database }
    var persistence: Persistence? { service.runtime.persistence }
    /// The database whose changes are being observed (a reload may replace it).
    var observedDatabase: AttributeDatabase?
    /// The BlueZ side: advertising, the pairing window, centrals and bonds, sockets.
    let port: ControlPort
    var security: SecurityDefinition { port.security }
    let version: String
    let logger: Logger
    /// Characteristic definitions by id, in configuration order.
    private(set) var characteristics: [(service: String, definition: CharacteristicDefinition)] = []
    private(set) var characteristicIndex: [String: Int] = [:]
    /// The advertisement definitions as last applied (configuration, restored or switched).
    var advertisements: [String: AdvertisementDefinition] = [:]
    /// Advertisement ids in configuration order.
    private(set) var advertisementOrder: [String] = []

    /// Where the claim on `org.gattd` stands.
    /// The well-known name asked for: `org.gattd`, or an instance's (`ControlNames.busName(instance:)`).
    /// Set before `start()`.
    public var busName = ControlNames.busName
    public internal(set) var nameState: NameState = .notStarted {
        didSet { if nameState != oldValue { onNameStateChange?(nameState) } }
    }
    /// Called whenever `nameState` changes (tests and logs).
    public var onNameStateChange: ((NameState) -> Void)?
    /// The last registration state the daemon reported.
    var registration: BlueZRegistrar.State = .starting
    /// The most recent failure worth showing in `GetStatus`.
    var lastError: String?
    /// Clients that called `Subscribe()`, each with the watch that forgets it when it
    /// leaves the bus. Signals are emitted only while this is not empty.
    var watchers: [String: SignalSubscription] = [:]
    /// Programs' handlers by `name` (bus name and object path), each with the watch that
    /// ends its claims when the program leaves the bus.
    var programHandlers: [String: (handler: ProgramHandler, watch: SignalSubscription)] = [:]
    /// The L2CAP channels (ControlManager+Channels.swift); nil: none defined or served.
    public var channels: ChannelServer?
    /// Registered channel takers by channel id.
    var channelTakers: [String: (sender: String, object: ObjectPath, watch: SignalSubscription)] = [:]
    /// The adapter gattd serves on (`hci0`), for `AdapterChanged`.
    var currentAdapter: String?

    public init(
        configuration: Configuration, service: RequestService, port: ControlPort, connection: BusConnection,
        version: String, logger: Logger
    ) {
        self.connection = connection
        self.service = service
        self.port = port
        self.version = version
        self.logger = logger
        describe(configuration)
    }

    /// A reload replaced the configuration (and, when the GATT tree changed, the request
    /// service's database and persistence): serve and observe the new ones from now on.
    public func reconfigure(configuration: Configuration) {
        describe(configuration)
        if nameState != .notStarted { observeDatabase() }
    }

    private func describe(_ configuration: Configuration) {
        var list: [(service: String, definition: CharacteristicDefinition)] = []
        for service in configuration.services {
            for characteristic in service.characteristics { list.append((service.id, characteristic)) }
        }
        characteristics = list
        characteristicIndex = Dictionary(
            list.enumerated().map { ($0.element.definition.id, $0.offset) }, uniquingKeysWith: { first, _ in first })
        advertisements = Dictionary(
            configuration.advertisements.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        advertisementOrder = configuration.advertisements.map(\.id)
    }

    public let interfaces: [DBusInterface] = [
        DBusInterface(
            name: ControlNames.managerInterface,
            methods: ControlRequest.methods.map { method in
                DBusMethod(method.name, inSignature: method.inSignature, outSignature: method.outSignature) {
                    (manager: ControlManager, call) in manager.serve(call, method)
                }
            },
            signals: ControlSignal.descriptions)
    ]

    /// Runs the request a call of `method` makes.
    private func serve(_ call: MethodCall, _ method: ControlRequest.Method) {
        let request: ControlRequest
        do {
            request = try method.decode(call.arguments())
        } catch {
            call.fail(error)
            return
        }
        switch request {
        case .listCharacteristics: call.reply([listCharacteristics()])
        case .getValue(let id): answer(call, getValue(id: id).map { [.bytes($0)] })
        case .setValue(let id, let value): setValue(id: id, to: value, call: call)
        case .setValueWithOptions(let id, let value, let centrals):
            if let centrals {
                setValue(id: id, to: value, centrals: centrals, call: call)
            } else {
                setValue(id: id, to: value, call: call)
            }
        case .setAdvertising(let id, let enabled): setAdvertising(id: id, enabled: enabled, call: call)
        case .setAdvertisementData(let id, let changes, let persist):
            setAdvertisementData(id: id, changes: changes, persist: persist, call: call)
        case .getStatus: call.reply([status()])
        case .subscribe: subscribe(call)
        case .unsubscribe: unsubscribe(call)
        case .registerHandler(let object, let ids, let operations):
            registerHandler(object: object, ids: ids, operations: operations, call: call)
        case .unregisterHandler(let object): unregisterHandler(object: object, call: call)
        case .openPairing(let seconds): openPairing(seconds: seconds, call: call)
        case .decidePairing(let address, let accept): decidePairing(address: address, accept: accept, call: call)
        case .listBonds: call.reply([listBonds()])
        case .removeBond(let address): removeBond(address: address, call: call)
        case .listCentrals: call.reply([listCentrals()])
        case .disconnectCentral(let address): disconnectCentral(address: address, call: call)
        case .registerChannel(let channel, let object): registerChannel(channel, object: object, call: call)
        case .unregisterChannel(let channel): unregisterChannel(channel, call: call)
        case .listChannels: call.reply([listChannels()])
        }
    }

    func answer(_ call: MethodCall, _ result: Result<[DBusValue], ControlError>) {
        switch result {
        case .success(let values): call.reply(values)
        case .failure(let error): refuse(call, error)
        }
    }

    func refuse(_ call: MethodCall, _ error: ControlError) {
        // A full queue is back-pressure a streaming program meets all the time, not news.
        let level: Logger.Level = if case .queueFull = error { .debug } else { .info }
        logger.log(
            level: level,
            "control call refused",
            metadata: ["operation": "\(call.member ?? "")", "sender": "\(call.sender ?? "?")", "error": "\(error.message)"])
        call.fail(error.dbusError)
    }
}
