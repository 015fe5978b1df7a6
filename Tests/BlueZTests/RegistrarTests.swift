// SPDX-License-Identifier: MIT
import BLEModel
import BlueZ
import DBusKit
import DaemonCore
import Logging
import TestSupport
import Testing

private let batteryUUID = "0000180f-0000-1000-8000-00805f9b34fb"
private let settingsUUID = "12345678-1234-5678-1234-56789abcdef0"
private let extraUUID = "0000181a-0000-1000-8000-00805f9b34fb"
/// The fixture's one application: settings includes battery, so they register together.
private let application = "/org/gattd/app/battery"
private let envApplication = "/org/gattd/app/env"

/// The configuration of `BlueZFixture` with one more service: what a reload brings.
private let reloadedText = BlueZFixture.configurationText.replacing(
    #"{"version": 1, "services": ["#,
    with: #"{"version": 1, "services": [{"id": "env", "uuid": "181A", "characteristics": []},"#)

extension BlueZFixture {
    /// A rebuild for `replaceApplication`: the reloaded configuration's tree, noted in
    /// `bluez`'s events when it runs.
    func rebuild(noting bluez: FakeBlueZ?, count: @escaping () -> Void) throws -> () -> Void {
        let configuration = try ConfigurationLoader.parse(Array(reloadedText.utf8)).get().configuration
        let service = factory.makeService(configuration).service
        return { [application] in
            bluez?.note("rebuild")
            count()
            try? application.rebuild(configuration: configuration, service: service)
        }
    }
}

extension BlueZFixture {
    /// A reload to `text` as the daemon makes it: only the applications bluetoothd would
    /// read differently leave (`groupsLeaving`); returns when the registrar settled.
    func reload(to text: String, noting bluez: FakeBlueZ) throws {
        let configuration = try ConfigurationLoader.parse(Array(text.utf8)).get().configuration
        let service = factory.makeService(configuration).service
        registrar.replaceApplication(
            leaving: { [application] in application.groupsLeaving(for: configuration) },
            rebuild: { [application] in
                bluez.note("rebuild")
                try? application.rebuild(configuration: configuration, service: service)
            })
        #expect(run { registrar.state == .registered(adapter: "hci0") })
        settle(bluez.connection)
    }
}

/// `reloadedText` with the env service holding one characteristic: a changed service.
private let changedEnvText = reloadedText.replacing(
    #"{"id": "env", "uuid": "181A", "characteristics": []}"#,
    with: #"{"id": "env", "uuid": "181A", "characteristics": [{"id": "temp", "uuid": "2A6E", "flags": ["read"], "value": [{"uint8": 20}]}]}"#)

/// The application's calls and tree reads, without the advertising ones.
private func applicationEvents(_ bluez: FakeBlueZ) -> [String] {
    bluez.events.filter { ["RegisterApplication", "UnregisterApplication", "read tree", "rebuild"].contains($0) }
}

@Suite("BlueZRegistrar against a stand-in bluetoothd", .serialized, .enabled(if: PrivateBus.isAvailable))
struct RegistrarTests {
    @Test("registers on the adapter once bluetoothd is there; bluetoothd reads the tree before it answers")
    func registersWithTree() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        f.start()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(
            bluez.calls("RegisterApplication") == [
                .init(member: "RegisterApplication", adapter: "hci0", object: application)
            ])
        #expect(applicationEvents(bluez) == ["RegisterApplication", "read tree"])
        #expect(f.registrarStates == [.discovering, .registering(adapter: "hci0"), .registered(adapter: "hci0")])
        #expect(f.registrar.adapterName == "hci0")
        #expect(f.application.trustedSender == bluez.uniqueName)

        let tree = try #require(bluez.adapters["hci0"]?.application)
        #expect(tree.objects(with: "org.bluez.GattService1").count == 2)
        #expect(tree.objects(with: "org.bluez.GattCharacteristic1").count == 4)
        #expect(tree.objects(with: "org.bluez.GattDescriptor1").count == 1)
        let battery = try #require(tree.object("org.bluez.GattService1", uuid: batteryUUID))
        let settings = try #require(tree.object("org.bluez.GattService1", uuid: settingsUUID))
        // Included services come first (bluetoothd resolves Includes against services it made).
        let order = tree.map(\.path)
        #expect(try #require(order.firstIndex(of: battery.path)) < #require(order.firstIndex(of: settings.path)))
        #expect(battery.interfaces["org.bluez.GattService1"]?["Primary"] == .bool(true))
        #expect(
            settings.interfaces["org.bluez.GattService1"]?["Includes"]?.asObjectPathArray == [objectPath(battery.path)])

        let level = try #require(
            tree.object("org.bluez.GattCharacteristic1", uuid: "00002a19-0000-1000-8000-00805f9b34fb"))
        let levelProperties = try #require(level.interfaces["org.bluez.GattCharacteristic1"])
        #expect(levelProperties["Service"] == .objectPath(objectPath(battery.path)))
        #expect(levelProperties["Flags"]?.asStringArray == ["read", "notify"])
        #expect(levelProperties["Value"]?.asBytes == [87])
        #expect(levelProperties["Notifying"] == .bool(false))
        #expect(level.path.hasPrefix(battery.path + "/"))

        let label = try #require(
            tree.object("org.bluez.GattCharacteristic1", uuid: "12345678-1234-5678-1234-56789abcdef1"))
        let name = try #require(tree.object("org.bluez.GattDescriptor1", uuid: "00002901-0000-1000-8000-00805f9b34fb"))
        #expect(name.interfaces["org.bluez.GattDescriptor1"]?["Characteristic"] == .objectPath(objectPath(label.path)))
        #expect(name.interfaces["org.bluez.GattDescriptor1"]?["Flags"]?.asStringArray == ["read"])
        #expect(name.interfaces["org.bluez.GattDescriptor1"]?["Value"]?.asBytes == Array("Label".utf8))
    }

    @Test("no bluetoothd at start: waits, then registers exactly once when it appears")
    func waitsForBlueZ() throws {
        let f = try BlueZFixture()
        f.start()
        #expect(f.registrar.state == .waitingForBlueZ)
        #expect(f.registrar.state.isSettled)
        let bluez = try f.startBlueZ()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterApplication").count == 1)
    }

    @Test("bluetoothd without an adapter: waits for one; InterfacesAdded with GattManager1 registers")
    func waitsForAdapter() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ(adapters: [])
        f.start()
        #expect(f.run { f.registrar.state == .waitingForAdapter(nil) })
        #expect(bluez.calls.isEmpty)
        try bluez.addAdapter("hci0")
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterApplication").count == 1)
    }

    @Test("bluetoothd leaving and returning: registers again exactly once, and trusts only the new owner")
    func blueZRestart() throws {
        let f = try BlueZFixture()
        let first = try f.startBlueZ()
        #expect(f.startRegistered())
        first.releaseName()
        #expect(f.run { f.registrar.state == .waitingForBlueZ })
        #expect(f.application.trustedSender == nil)
        #expect(f.advertiser.advertisingIDs.isEmpty)

        let second = try f.startBlueZ()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        f.settle(second.connection)
        f.settle(first.connection)
        #expect(first.calls("RegisterApplication").count == 1)
        #expect(second.calls("RegisterApplication").count == 1)
        #expect(f.application.trustedSender == second.uniqueName)

        let path = try #require(
            second.adapters["hci0"]?.application?.object(
                "org.bluez.GattCharacteristic1", uuid: "00002a19-0000-1000-8000-00805f9b34fb")?.path)
        let fromOld = try #require(call(f, first.connection, objectPath(path), "ReadValue", [.variantDictionary([])]))
        #expect(errorName(fromOld) == "org.bluez.Error.NotAuthorized")
        let fromNew = try #require(call(f, second.connection, objectPath(path), "ReadValue", [.variantDictionary([])]))
        #expect(try fromNew.get().arguments() == [.bytes([87])])
    }

    @Test("the adapter removed and added again: waits for it, then registers again")
    func adapterRemovedAndAdded() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        bluez.removeAdapter("hci0")
        #expect(f.run { f.registrar.state == .waitingForAdapter(nil) })
        #expect(f.registrar.adapterName == nil)
        try bluez.addAdapter("hci0")
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterApplication").count == 2)
        #expect(bluez.adapters["hci0"]?.application != nil)
    }

    @Test("a configured adapter is used even when another comes first; others appearing are ignored")
    func preferredAdapter() throws {
        let f = try BlueZFixture(preferredAdapter: "hci1")
        let bluez = try f.startBlueZ(adapters: ["hci0"])
        f.start()
        #expect(f.run { f.registrar.state == .waitingForAdapter("hci1") })
        try bluez.addAdapter("hci2")
        try bluez.addAdapter("hci1")
        #expect(f.run { f.registrar.state == .registered(adapter: "hci1") })
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterApplication").map(\.adapter) == ["hci1"])
    }

    @Test("without a configured adapter: the first (by path) with GattManager1")
    func firstAdapterWithGattManager() throws {
        let f = try BlueZFixture()
        let bluez = try FakeBlueZ(address: f.bus.address, loop: f.loop)
        try bluez.addAdapter("hci0", gatt: false)
        try bluez.addAdapter("hci2")
        try bluez.addAdapter("hci1")
        #expect(bluez.claimName())
        f.start()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci1") })
        #expect(bluez.calls("RegisterApplication").map(\.adapter) == ["hci1"])
    }

    @Test("RegisterApplication without an answer (NoReply) is retried after a doubling back-off, on the clock")
    func noReplyRetriedAfterBackoff() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        let noReply = DBusError(name: DBusError.Name.noReply, message: "Did not receive a reply")
        adapter.registerApplicationErrors = [noReply, noReply]
        f.start()
        let refusal = Refusal(subject: .application, errorName: noReply.name, message: noReply.message)
        #expect(f.run { f.registrar.state == .failed(adapter: "hci0", reason: noReply.message, refusal: refusal) })
        #expect(f.clock.nextDelay == .seconds(1))
        f.clock.advance(by: .milliseconds(999))
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterApplication").count == 1)
        f.clock.advance(by: .milliseconds(1))
        #expect(f.run { bluez.calls("RegisterApplication").count == 2 && f.clock.pendingCount == 1 })
        #expect(f.clock.nextDelay == .seconds(2))
        f.clock.advance(by: .seconds(2))
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(bluez.calls("RegisterApplication").count == 3)
        #expect(f.clock.pendingCount == 0)
    }

    @Test("a refusal other than NoReply is reported and not retried")
    func refusalNotRetried() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        try #require(bluez.adapters["hci0"]).registerApplicationErrors = [
            DBusError(name: "org.bluez.Error.Failed", message: "Failed to create entry in database")
        ]
        f.start()
        // bluetoothd's answer for bluez/bluez #821 too: the reason names it as a possible cause;
        // the answer itself is kept as it came, for gattd --doctor.
        let refusal = Refusal(
            subject: .application, errorName: "org.bluez.Error.Failed", message: "Failed to create entry in database")
        #expect(
            f.run {
                f.registrar.state
                    == .failed(
                        adapter: "hci0",
                        reason: "Failed to create entry in database; "
                            + KnownProblems.explanation(KnownProblems.cause(of: refusal, kernel: nil, bluetoothd: nil)!),
                        refusal: refusal)
            })
        #expect(f.registrar.state.summary.contains("possibly known problem gatt-handle-required"))
        #expect(f.registrar.state.isSettled)
        #expect(f.registrar.state.summary.contains("Failed to create entry in database"))
        #expect(f.clock.pendingCount == 0)
        f.clock.advance(by: .seconds(120))
        f.settle(bluez.connection)
        #expect(bluez.calls("RegisterApplication").count == 1)
    }

    @Test("AlreadyExists from bluetoothd counts as registered")
    func alreadyExistsIsRegistered() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        try #require(bluez.adapters["hci0"]).registerApplicationErrors = [
            DBusError(name: "org.bluez.Error.AlreadyExists", message: "Already Exists")
        ]
        f.start()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(f.clock.pendingCount == 0)
    }

    @Test("GetManagedObjects failing is retried after the back-off; then the adapter is used")
    func listingRetried() throws {
        let f = try BlueZFixture()
        let bluez = try FakeBlueZ(address: f.bus.address, loop: f.loop)
        try bluez.addAdapter("hci0")
        bluez.connection.removeObjectManager(at: "/")
        #expect(bluez.claimName())
        f.start()
        #expect(f.run { f.clock.pendingCount == 1 })
        #expect(f.registrar.state == .discovering)
        #expect(f.clock.nextDelay == .seconds(1))
        bluez.connection.addObjectManager(at: "/")
        f.clock.advance(by: .seconds(1))
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(bluez.calls("RegisterApplication").count == 1)
    }

    @Test("a reload while RegisterApplication is in flight waits for the answer, then swaps every application once")
    func reloadDuringRegistration() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        let adapter = try #require(bluez.adapters["hci0"])
        adapter.holdRegistrations = true
        f.start()
        #expect(f.run { adapter.heldRegistrationCount == 1 })
        var rebuilds = 0
        f.registrar.replaceApplication(try f.rebuild(noting: bluez) { rebuilds += 1 })
        f.settle(bluez.connection)
        #expect(rebuilds == 0)
        #expect(applicationEvents(bluez) == ["RegisterApplication", "read tree"])
        adapter.holdRegistrations = false
        adapter.answerHeldRegistrations()
        #expect(
            f.run { bluez.calls("RegisterApplication").count == 3 && f.registrar.state == .registered(adapter: "hci0") }
        )
        f.settle(bluez.connection)
        #expect(rebuilds == 1)
        #expect(
            applicationEvents(bluez) == [
                "RegisterApplication", "read tree", "UnregisterApplication", "rebuild", "RegisterApplication",
                "RegisterApplication", "read tree", "read tree",
            ])
        #expect(adapter.application?.object("org.bluez.GattService1", uuid: extraUUID) != nil)
    }

    @Test("replacing the whole tree while registered: unregister, rebuild, register each; bluetoothd reads the new tree")
    func reloadWhileRegistered() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        let adapter = try #require(bluez.adapters["hci0"])
        #expect(adapter.application?.object("org.bluez.GattService1", uuid: extraUUID) == nil)
        var rebuilds = 0
        f.registrar.replaceApplication(try f.rebuild(noting: bluez) { rebuilds += 1 })
        #expect(f.registrar.state == .registering(adapter: "hci0"))
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(rebuilds == 1)
        #expect(
            applicationEvents(bluez) == [
                "RegisterApplication", "read tree", "UnregisterApplication", "rebuild", "RegisterApplication",
                "RegisterApplication", "read tree", "read tree",
            ])
        #expect(adapter.application?.object("org.bluez.GattService1", uuid: extraUUID) != nil)
        #expect(adapter.application?.objects(with: "org.bluez.GattService1").count == 3)
    }

    @Test("a reload with no bluetoothd rebuilds at once; the next registration carries the new tree")
    func reloadWithoutBlueZ() throws {
        let f = try BlueZFixture()
        f.start()
        var rebuilds = 0
        f.registrar.replaceApplication(try f.rebuild(noting: nil) { rebuilds += 1 })
        #expect(rebuilds == 1)
        let bluez = try f.startBlueZ()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(applicationEvents(bluez) == ["RegisterApplication", "RegisterApplication", "read tree", "read tree"])
        #expect(bluez.adapters["hci0"]?.application?.object("org.bluez.GattService1", uuid: extraUUID) != nil)
    }

    @Test("bluetoothd leaving while RegisterApplication is in flight: its late answer is ignored")
    func lateAnswerIgnored() throws {
        let f = try BlueZFixture()
        let first = try f.startBlueZ()
        let adapter = try #require(first.adapters["hci0"])
        adapter.holdRegistrations = true
        f.start()
        #expect(f.run { adapter.heldRegistrationCount == 1 })
        first.releaseName()
        #expect(f.run { f.registrar.state == .waitingForBlueZ })
        adapter.answerHeldRegistrations()
        f.settle(first.connection)
        #expect(f.registrar.state == .waitingForBlueZ)
        let second = try f.startBlueZ()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        #expect(second.calls("RegisterApplication").count == 1)
    }

    @Test("an InterfacesAdded from a process that is not bluetoothd is ignored")
    func strangerInterfacesAdded() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ(adapters: [])
        f.start()
        #expect(f.run { f.registrar.state == .waitingForAdapter(nil) })
        let stranger = FakeBlueZ.Impostor(try f.stranger())
        try stranger.announceAdapter("hci7")
        f.settle(stranger.connection)
        f.settle(bluez.connection)
        #expect(f.registrar.state == .waitingForAdapter(nil))
        try bluez.addAdapter("hci0")
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
    }

    @Test("a reload adding a service registers it alone: one RegisterApplication, no UnregisterApplication")
    func reloadAddsOneApplication() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        let before = bluez.calls.count
        try f.reload(to: reloadedText, noting: bluez)
        let calls = bluez.calls.dropFirst(before).filter { $0.member.hasSuffix("Application") }
        #expect(calls == [.init(member: "RegisterApplication", adapter: "hci0", object: envApplication)])
        let adapter = try #require(bluez.adapters["hci0"])
        #expect(adapter.applications.keys.sorted() == [application, envApplication])
        #expect(adapter.application?.objects(with: "org.bluez.GattService1").count == 3)
        // The service left alone still answers, backed by the reloaded database.
        let level = try #require(
            adapter.application?.object("org.bluez.GattCharacteristic1", uuid: "00002a19-0000-1000-8000-00805f9b34fb"))
        let read = try #require(call(f, bluez.connection, objectPath(level.path), "ReadValue", [.variantDictionary([])]))
        #expect(try read.get().arguments() == [.bytes([87])])
    }

    @Test("a reload removing a service unregisters it alone; an unchanged reload calls nothing")
    func reloadRemovesOneApplication() throws {
        let f = try BlueZFixture(configurationText: reloadedText)
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        #expect(bluez.calls("RegisterApplication").count == 2)
        var before = bluez.calls.count
        try f.reload(to: reloadedText, noting: bluez)
        #expect(bluez.calls.dropFirst(before).filter { $0.member.hasSuffix("Application") }.isEmpty)
        before = bluez.calls.count
        try f.reload(to: BlueZFixture.configurationText, noting: bluez)
        let calls = bluez.calls.dropFirst(before).filter { $0.member.hasSuffix("Application") }
        #expect(calls == [.init(member: "UnregisterApplication", adapter: "hci0", object: envApplication)])
        #expect(try #require(bluez.adapters["hci0"]).applications.keys.sorted() == [application])
    }

    @Test("a reload changing one service replaces it alone; bluetoothd returning registers every application")
    func reloadChangesOneApplication() throws {
        let f = try BlueZFixture(configurationText: reloadedText)
        let first = try f.startBlueZ()
        #expect(f.startRegistered())
        let before = first.calls.count
        try f.reload(to: changedEnvText, noting: first)
        let calls = first.calls.dropFirst(before).filter { $0.member.hasSuffix("Application") }
        #expect(
            calls == [
                .init(member: "UnregisterApplication", adapter: "hci0", object: envApplication),
                .init(member: "RegisterApplication", adapter: "hci0", object: envApplication),
            ])
        #expect(
            first.adapters["hci0"]?.applications[envApplication]?.object(
                "org.bluez.GattCharacteristic1", uuid: "00002a6e-0000-1000-8000-00805f9b34fb") != nil)

        first.releaseName()
        #expect(f.run { f.registrar.state == .waitingForBlueZ })
        let second = try f.startBlueZ()
        #expect(f.run { f.registrar.state == .registered(adapter: "hci0") })
        f.settle(second.connection)
        #expect(second.calls("RegisterApplication").map(\.object).sorted() == [application, envApplication])
        #expect(second.adapters["hci0"]?.application?.objects(with: "org.bluez.GattService1").count == 3)
    }

    @Test("reregister(service:) unregisters and registers that service's application alone")
    func reregisterOneService() throws {
        let f = try BlueZFixture(configurationText: reloadedText)
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        let before = bluez.calls.count
        #expect(f.registrar.reregister(service: "env"))
        #expect(f.run { bluez.calls("RegisterApplication").count == 3 && f.registrar.state == .registered(adapter: "hci0") })
        let calls = bluez.calls.dropFirst(before).filter { $0.member.hasSuffix("Application") }
        #expect(
            calls == [
                .init(member: "UnregisterApplication", adapter: "hci0", object: envApplication),
                .init(member: "RegisterApplication", adapter: "hci0", object: envApplication),
            ])
        #expect(!f.registrar.reregister(service: "nothing"))
    }

    @Test("stop unregisters the application, then completes")
    func stopUnregisters() throws {
        let f = try BlueZFixture()
        let bluez = try f.startBlueZ()
        #expect(f.startRegistered())
        var stopped = false
        f.registrar.stop { stopped = true }
        #expect(f.run { stopped })
        #expect(
            bluez.calls("UnregisterApplication") == [
                .init(member: "UnregisterApplication", adapter: "hci0", object: application)
            ])
        #expect(bluez.adapters["hci0"]?.application == nil)
    }
}

/// Calls `member` of `GattCharacteristic1`/`GattDescriptor1` at `path` from `caller` and waits for the answer.
func call(
    _ f: BlueZFixture, _ caller: BusConnection, _ path: ObjectPath, _ member: String, _ arguments: [DBusValue] = [],
    interface: String = "org.bluez.GattCharacteristic1"
) -> Result<Message, DBusError>? {
    var result: Result<Message, DBusError>?
    caller.call(
        destination: f.connection.uniqueName, path: path, interface: interface, member: member, arguments: arguments
    ) { result = $0 }
    f.run { result != nil }
    return result
}

func errorName(_ result: Result<Message, DBusError>) -> String? {
    if case .failure(let error) = result { return error.name }
    return nil
}
