// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import Control
import ControlAPI
import DBusKit
import DaemonCore
import Logging
import Mainloop
import TestSupport

/// gattd's control API on a private bus: a server connection with the manager, a client
/// connection playing gattctl, both on one loop; state saved to `MemoryStorage`.
final class ControlFixture {
    static let configurationText = """
        {"version": 1, "services": [
          {"id": "heart-rate", "uuid": "180D", "characteristics": [
            {"id": "hr", "uuid": "2A37", "flags": ["notify"], "value": [{"uint8": 0}, {"uint8": 72}],
             "minLength": 2, "maxLength": 2, "descriptors": [
               {"id": "hr-label", "uuid": "2901", "flags": ["read"], "value": {"utf8": "HR"}}]}]},
          {"id": "settings", "uuid": "12345678-1234-5678-1234-56789abcdef0", "characteristics": [
            {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1", "flags": ["read", "write"],
             "value": {"utf8": "hello"}, "minLength": 1, "maxLength": 20}]}],
         "advertisements": [
          {"id": "main", "type": "peripheral", "localName": "ctl"},
          {"id": "beacon", "type": "broadcast", "manufacturerData": {"0xFFFF": {"hex": "01"}}}]}
        """

    let bus: PrivateBus
    let loop: EventLoop
    let server: BusConnection
    let client: BusConnection
    let configuration: Configuration
    let database: AttributeDatabase
    let storage = MemoryStorage()
    let persistence: Persistence
    let runtime: Runtime
    let service: RequestService
    /// The BlueZ side as the daemon assembles it; never started (no bluetoothd here).
    let peripheral: Peripheral
    var session: BlueZSession { peripheral.session }
    var advertiser: Advertiser { peripheral.advertiser }
    let manager: ControlManager

    /// `port` makes the manager's port from the advertiser; by default the port has the
    /// advertiser alone, as the daemon's has it (and nothing that pairs).
    init(
        savedAdvertisements: [String: Bool] = [:],
        port: (Advertiser) -> ControlPort = { ControlPort(advertising: .init($0)) }
    ) throws {
        bus = try PrivateBus()
        loop = try EventLoop()
        server = try BusConnection(address: bus.address, loop: loop)
        client = try BusConnection(address: bus.address, loop: loop)
        configuration = try ConfigurationLoader.parse(Array(Self.configurationText.utf8)).get().configuration
        var saved: StateLoadResult?
        if !savedAdvertisements.isEmpty {
            var document = StateDocument()
            document.advertisements = savedAdvertisements
            saved = .loaded(document)
        }
        // As the daemon builds it, with the state in `storage`.
        let factory = RuntimeFactory(
            loop: loop, state: .storage(storage, saved: saved), logger: quietLogger)
        (service, runtime) = factory.makeService(configuration)
        database = runtime.database
        guard let persistence = runtime.persistence else { throw FixtureError.noPersistence }
        self.persistence = persistence
        // No bluetoothd here: the session is never started, so nothing is registered.
        peripheral = try Peripheral(
            configuration: configuration, served: configuration, service: service, connection: server,
            preferredAdapter: nil, loop: loop, logger: quietLogger)
        manager = ControlManager(
            configuration: configuration, service: service, port: port(peripheral.advertiser), connection: server,
            version: "test-1", logger: quietLogger)
    }

    /// Starts the manager and waits until the name claim is settled.
    @discardableResult
    func start() -> ControlManager.NameState {
        manager.start()
        loop.run(until: { self.manager.nameState != .requesting }, timeout: .seconds(5))
        return manager.nameState
    }

    /// Calls the manager at `org.gattd` from the client and waits for the reply.
    func call(_ member: String, _ arguments: [DBusValue] = [], destination: String = ControlNames.busName)
        -> Result<[DBusValue], DBusError>?
    {
        var result: Result<Message, DBusError>?
        client.call(
            destination: destination, path: ControlNames.managerPath, interface: ControlNames.managerInterface,
            member: member, arguments: arguments
        ) { result = $0 }
        loop.run(until: { result != nil }, timeout: .seconds(5))
        return result.map { outcome in outcome.flatMap { message in Result { () throws(DBusError) in try message.arguments() } } }
    }

    /// Subscribes the client to the manager's signals; returns the list they land in.
    func recordSignals() -> SignalLog {
        let log = SignalLog()
        log.subscription = client.subscribe(
            sender: ControlNames.busName, path: ControlNames.managerPath, interface: ControlNames.managerInterface
        ) { message in
            guard let arguments = try? message.arguments(), arguments.count >= 3 else { return }
            log.signals.append(
                .init(
                    member: message.member ?? "", id: arguments[0].asString ?? "", value: arguments[1].asBytes ?? [],
                    detail: arguments[2].asString ?? ""))
        }
        // Signals are sent only to subscribed clients; the reply also means the bus has the
        // match rule.
        _ = call("Subscribe")
        return log
    }

    func status(_ name: String) -> DBusValue? {
        guard case .success(let values)? = call("GetStatus") else { return nil }
        return values.first?.variantDictionaryValue(name)
    }
}

enum FixtureError: Error {
    /// The factory built no persistence although it was given a storage.
    case noPersistence
}

/// Signals the client received, in order.
final class SignalLog {
    struct Signal: Equatable {
        var member: String
        var id: String
        var value: [UInt8]
        var detail: String
    }

    var signals: [Signal] = []
    var subscription: SignalSubscription?
}
