// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import DBusKit
import DaemonCore
import Logging
import Mainloop
import TestSupport

/// gattd's BlueZ side on a private bus, assembled as the daemon assembles it (`Peripheral`:
/// the BlueZ session, the GATT application, the registrar, the advertiser and the central
/// watch on one connection, and the pairing, following the session in the daemon's order),
/// its back-offs and pairing window on a `ManualScheduler`; `FakeBlueZ` instances play bluetoothd on their own connections, on
/// the same loop.
final class BlueZFixture {
    static let configurationText = """
        {"version": 1, "services": [
          {"id": "battery", "uuid": "180F", "characteristics": [
            {"id": "level", "uuid": "2A19", "flags": ["read", "notify"], "value": [{"uint8": 87}]}]},
          {"id": "settings", "uuid": "12345678-1234-5678-1234-56789abcdef0", "includes": ["battery"],
           "characteristics": [
            {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcdef1",
             "flags": ["read", "write", "write-without-response"],
             "value": {"utf8": "hello"}, "minLength": 1, "maxLength": 8,
             "descriptors": [{"id": "label-name", "uuid": "2901", "flags": ["read"], "value": {"utf8": "Label"}}]},
            {"id": "secret", "uuid": "12345678-1234-5678-1234-56789abcdef2", "flags": ["write"],
             "value": [{"uint8": 1}], "minLength": 1, "maxLength": 4},
            {"id": "alarm", "uuid": "12345678-1234-5678-1234-56789abcdef3", "flags": ["read", "indicate"],
             "value": [{"uint8": 0}]}]}],
         "advertisements": [
          {"id": "main", "type": "peripheral", "localName": "gattd-test", "serviceUUIDs": ["180F"],
           "manufacturerData": {"0xFFFF": {"hex": "0102"}}},
          {"id": "beacon", "type": "broadcast", "manufacturerData": {"0xFFFF": {"hex": "03"}}, "timeout": 10},
          {"id": "spare", "type": "peripheral", "localName": "off", "enabled": false}]}
        """

    let bus: PrivateBus
    let loop: EventLoop
    let connection: BusConnection
    let clock = ManualScheduler()
    let configuration: Configuration
    /// Builds the runtime, as the daemon's does; tests build a reload's service with it.
    let factory: RuntimeFactory
    let database: AttributeDatabase
    let runtime: Runtime
    let service: RequestService
    let peripheral: Peripheral
    var application: GattApplication { peripheral.application }
    var session: BlueZSession { peripheral.session }
    var registrar: BlueZRegistrar { peripheral.registrar }
    var advertiser: Advertiser { peripheral.advertiser }
    /// Carries out `security` with the peripheral's pairing agent and window, as the
    /// daemon's does; not started (`pairing.start(centrals:)`).
    let pairing: Pairing
    /// Every state the registrar went through, in order.
    var registrarStates: [BlueZRegistrar.State] = []

    init(
        configurationText: String = BlueZFixture.configurationText, preferredAdapter: String? = nil,
        logger: Logger = quietLogger
    ) throws {
        bus = try PrivateBus()
        loop = try EventLoop()
        connection = try BusConnection(address: bus.address, loop: loop)
        configuration = try ConfigurationLoader.parse(Array(configurationText.utf8)).get().configuration
        // As the daemon builds it, with nothing saved and notifications paced by `clock`.
        factory = RuntimeFactory(
            loop: loop, state: .none,
            scheduling: RuntimeScheduling(clock: clock.clock, timers: .loop(loop), persistence: .loop(loop)),
            logger: logger)
        (service, runtime) = factory.makeService(configuration)
        database = runtime.database
        peripheral = try Peripheral(
            configuration: configuration, served: configuration, service: service, connection: connection,
            preferredAdapter: preferredAdapter, loop: loop, logger: logger, clock: clock.clock)
        pairing = Pairing(definition: configuration.security, peripheral: peripheral, loop: loop, logger: logger)
        peripheral.registrar.onStateChange = { [unowned self] in self.registrarStates.append($0) }
        peripheral.follow(pairing: { [unowned pairing] in pairing.handle($0) })
    }

    /// A bluetoothd that owns `org.bluez`, with the adapters named (GATT and advertising managers).
    func startBlueZ(adapters: [String] = ["hci0"], supportedInstances: Int = 5) throws -> FakeBlueZ {
        let bluez = try FakeBlueZ(address: bus.address, loop: loop)
        for name in adapters { try bluez.addAdapter(name, supportedInstances: supportedInstances) }
        guard bluez.claimName() else { throw FixtureError(description: "could not own org.bluez") }
        return bluez
    }

    /// Another process on the bus (neither gattd nor bluetoothd).
    func stranger() throws -> BusConnection { try BusConnection(address: bus.address, loop: loop) }

    /// Starts the session and waits for the registrar's first answer about `org.bluez`.
    func start() {
        peripheral.start()
        loop.run(until: { self.registrar.state != .starting }, timeout: .seconds(10))
    }

    /// Runs the loop until `condition` holds (true) or 10 s pass (false).
    @discardableResult
    func run(until condition: () -> Bool) -> Bool {
        loop.run(until: condition, timeout: .seconds(10))
    }

    /// Starts gattd against `bluez` and waits until the application is registered and
    /// every enabled advertisement has its answer.
    func startRegistered() -> Bool {
        start()
        return run { self.registrar.state == .registered(adapter: "hci0") && self.advertiser.isSettled }
    }

    /// Lets every message already sent on the bus be handled: a round trip from `connection`
    /// to the bus and to gattd, and gattd's own round trip to the bus.
    func settle(_ other: BusConnection) {
        var done = 0
        other.call(
            destination: connection.uniqueName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping"
        ) { _ in done += 1 }
        connection.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetId"
        ) { _ in done += 1 }
        run { done == 2 }
        var again = false
        other.call(
            destination: connection.uniqueName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping"
        ) { _ in again = true }
        run { again }
    }

    func attribute(_ id: String) -> Attribute? { database[id] }

    struct FixtureError: Error, CustomStringConvertible {
        var description: String
    }
}
