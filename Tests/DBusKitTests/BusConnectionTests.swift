// SPDX-License-Identifier: MIT
import DBusKit
import Foundation
import FoundationXML
import Mainloop
import TestSupport
import Testing

/// Two connections (server, client) on one private bus, both on one loop.
private struct Fixture {
    let bus: PrivateBus
    let loop: EventLoop
    let server: BusConnection
    let client: BusConnection

    init() throws {
        bus = try PrivateBus()
        loop = try EventLoop()
        server = try BusConnection(address: bus.address, loop: loop)
        client = try BusConnection(address: bus.address, loop: loop)
    }

    func call(_ path: ObjectPath, _ interface: String?, _ member: String, _ arguments: [DBusValue] = [],
              timeout: Duration? = nil) -> Result<Message, DBusError>? {
        roundTrip(loop, client, to: server.uniqueName, path: path, interface: interface, member: member,
                  arguments: arguments, timeout: timeout)
    }

    /// A client round trip through the bus: every message the client sent before it
    /// (e.g. AddMatch) has been processed by the bus when it returns.
    func syncClientWithBus() {
        _ = roundTrip(loop, client, to: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                      interface: "org.freedesktop.DBus", member: "GetId")
    }
}

private let testInterface = DBusInterface(
    name: "org.example.Test",
    methods: [
        DBusMethod("Echo", inSignature: "s", outSignature: "s"),
        DBusMethod("ReadValue", inSignature: "a{sv}", outSignature: "ay"),
        DBusMethod("Fail"),
        DBusMethod("Hang"),
        DBusMethod("Later", outSignature: "s"),
        DBusMethod("Notify"),
    ],
    properties: [
        DBusProperty("Name", signature: "s"),
        DBusProperty("Level", signature: "q", access: .readwrite),
        DBusProperty("Missing", signature: "b"),
    ],
    signals: [DBusSignalDescription("Changed", signature: "s")])

private func makeTestObject(loop: EventLoop) -> TestObject {
    let object = TestObject(interfaces: [testInterface], values: ["Name": .string("dev"), "Level": .uint16(3)])
    object.handler = { [unowned object] call in
        object.received.append(call)
        switch call.member {
        case "Echo": call.reply([(try? call.arguments())?.first ?? .string("?")])
        case "ReadValue": call.reply([.bytes(Array(repeating: 0xAB, count: 20))])
        case "Fail": call.fail(DBusError(name: "org.example.Error.Custom", message: "nope"))
        case "Later": _ = loop.timer(after: .milliseconds(10)) { call.reply([.string("later")]) }
        case "Notify": call.reply()
        default: break  // Hang: keep the call (stored in `received`) unanswered
        }
    }
    return object
}

@Suite("BusConnection on a private bus", .serialized, .enabled(if: PrivateBus.isAvailable))
struct BusConnectionTests {
    @Test("async call gets its reply; an error reply keeps its name and message")
    func callAndErrorReply() throws {
        let f = try Fixture()
        try f.server.export(makeTestObject(loop: f.loop), at: "/obj")
        let echo = try #require(f.call("/obj", "org.example.Test", "Echo", [.string("hi")]))
        #expect(try echo.get().arguments() == [.string("hi")])
        let read = try #require(f.call("/obj", "org.example.Test", "ReadValue", [.variantDictionary([("offset", .uint16(0))])]))
        #expect(try read.get().arguments() == [.bytes(Array(repeating: 0xAB, count: 20))])
        let failure = try #require(f.call("/obj", "org.example.Test", "Fail"))
        #expect(throws: DBusError(name: "org.example.Error.Custom", message: "nope")) { try failure.get() }
        let ping = try #require(f.call("/obj", "org.freedesktop.DBus.Peer", "Ping"))
        #expect((try? ping.get()) != nil)
    }

    @Test("an unanswered call times out with NoReply; a deferred reply arrives later")
    func timeoutAndDeferredReply() throws {
        let f = try Fixture()
        try f.server.export(makeTestObject(loop: f.loop), at: "/obj")
        let hung = try #require(f.call("/obj", "org.example.Test", "Hang", timeout: .milliseconds(100)))
        guard case .failure(let error) = hung else {
            Issue.record("Hang was answered: \(hung)")
            return
        }
        #expect(error.name == DBusError.Name.noReply)
        let later = try #require(f.call("/obj", "org.example.Test", "Later"))
        #expect(try later.get().arguments() == [.string("later")])
    }

    @Test("unknown object, interface, method and wrong argument types get standard errors; serving continues")
    func dispatchErrors() throws {
        let f = try Fixture()
        try f.server.export(makeTestObject(loop: f.loop), at: "/obj")
        func errorName(_ result: Result<Message, DBusError>?) -> String? {
            if case .failure(let error)? = result { return error.name }
            return nil
        }
        #expect(errorName(f.call("/nothing", "org.example.Test", "Echo", [.string("x")])) == DBusError.Name.unknownObject)
        #expect(errorName(f.call("/obj", "org.example.Other", "Echo", [.string("x")])) == DBusError.Name.unknownInterface)
        #expect(errorName(f.call("/obj", "org.example.Test", "Nope")) == DBusError.Name.unknownMethod)
        let wrong = f.call("/obj", "org.example.Test", "Echo", [.int32(5)])
        #expect(errorName(wrong) == DBusError.Name.invalidArgs)
        if case .failure(let error)? = wrong { #expect(error.message.contains("Echo") && error.message.contains("'s'")) }
        let echo = try #require(f.call("/obj", "org.example.Test", "Echo", [.string("still here")]))
        #expect(try echo.get().arguments() == [.string("still here")])
    }

    @Test("a NO_REPLY_EXPECTED call is handled but never answered; the next call still is")
    func noReplyExpected() throws {
        let f = try Fixture()
        let object = makeTestObject(loop: f.loop)
        try f.server.export(object, at: "/obj")
        var strayReplies: [Message] = []
        f.client.onStrayReply = { strayReplies.append($0) }
        let notify = try Message.methodCall(destination: f.server.uniqueName, path: "/obj",
                                            interface: "org.example.Test", member: "Notify")
        notify.noReplyExpected = true
        try f.client.send(notify)
        // Replies from the server reach the client in order: once Echo's reply is here,
        // a reply to Notify would have been dispatched already.
        let echo = try #require(f.call("/obj", "org.example.Test", "Echo", [.string("after")]))
        #expect(try echo.get().arguments() == [.string("after")])
        #expect(object.received.map { $0.member } == ["Notify", "Echo"])
        #expect(object.received.first?.noReplyExpected == true)
        #expect(strayReplies.isEmpty)
    }

    @Test("Properties Get/GetAll/Set answer values and the standard errors")
    func properties() throws {
        let f = try Fixture()
        let object = makeTestObject(loop: f.loop)
        try f.server.export(object, at: "/obj")
        let p = "org.freedesktop.DBus.Properties"
        func errorName(_ result: Result<Message, DBusError>?) -> String? {
            if case .failure(let error)? = result { return error.name }
            return nil
        }
        let get = try #require(f.call("/obj", p, "Get", [.string("org.example.Test"), .string("Name")]))
        #expect(try get.get().arguments() == [.variant(.string("dev"))])
        let all = try #require(f.call("/obj", p, "GetAll", [.string("org.example.Test")]))
        let entries = try #require(try all.get().arguments().first?.variantDictionaryEntries)
        #expect(entries.map(\.0) == ["Name", "Level"])
        #expect(errorName(f.call("/obj", p, "Get", [.string("org.example.Nope"), .string("Name")])) == DBusError.Name.unknownInterface)
        #expect(errorName(f.call("/obj", p, "Get", [.string("org.example.Test"), .string("Nope")])) == DBusError.Name.unknownProperty)
        #expect(errorName(f.call("/obj", p, "Set", [.string("org.example.Test"), .string("Name"), .variant(.string("x"))]))
            == DBusError.Name.propertyReadOnly)
        #expect(errorName(f.call("/obj", p, "Set", [.string("org.example.Test"), .string("Level"), .variant(.string("x"))]))
            == DBusError.Name.invalidArgs)
        #expect(errorName(f.call("/obj", p, "Get", [.string("org.example.Test")])) == DBusError.Name.invalidArgs)
        let set = try #require(f.call("/obj", p, "Set", [.string("org.example.Test"), .string("Level"), .variant(.uint16(9))]))
        #expect((try? set.get()) != nil)
        #expect(object.values["Level"] == .uint16(9))
    }

    @Test("GetManagedObjects lists objects below the root in export order; InterfacesAdded/Removed are emitted")
    func objectManager() throws {
        let f = try Fixture()
        f.server.addObjectManager(at: "/app")
        for path: ObjectPath in ["/app/service1", "/app/service0", "/app/service0/char0", "/elsewhere"] {
            try f.server.export(makeTestObject(loop: f.loop), at: path)
        }
        let managed = try #require(f.call("/app", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"))
        let objects = try #require(try managed.get().arguments().first?.dictionaryEntries)
        #expect(objects.map(\.key) == [.objectPath("/app/service1"), .objectPath("/app/service0"), .objectPath("/app/service0/char0")])
        let interfaces = try #require(objects.first?.value.dictionaryEntries)
        #expect(interfaces.map(\.key.asString) == ["org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties", "org.example.Test"])
        #expect(interfaces.last?.value.variantDictionaryValue("Name") == .string("dev"))
        #expect(interfaces.last?.value.variantDictionaryValue("Missing") == nil)

        var added: [DBusValue] = []
        var removed: [DBusValue] = []
        let addSub = f.client.subscribe(sender: f.server.uniqueName, path: "/app",
                                        interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded") {
            added.append(contentsOf: (try? $0.arguments()) ?? [])
        }
        let removeSub = f.client.subscribe(sender: f.server.uniqueName, interface: "org.freedesktop.DBus.ObjectManager",
                                           member: "InterfacesRemoved") {
            removed.append(contentsOf: (try? $0.arguments()) ?? [])
        }
        f.syncClientWithBus()
        try f.server.export(makeTestObject(loop: f.loop), at: "/app/service2")
        f.server.unexport("/app/service2")
        #expect(f.loop.run(until: { !added.isEmpty && !removed.isEmpty }, timeout: .seconds(5)))
        #expect(added.first == .objectPath("/app/service2"))
        #expect(added.last?.dictionaryEntries?.last?.key == .string("org.example.Test"))
        #expect(removed.first == .objectPath("/app/service2"))
        #expect(removed.last?.asStringArray?.contains("org.example.Test") == true)
        addSub.cancel()
        removeSub.cancel()
    }

    @Test("Introspect returns XML that parses and lists interfaces and child nodes, including intermediate ones")
    func introspection() throws {
        let f = try Fixture()
        f.server.addObjectManager(at: "/org/example/app")
        try f.server.export(makeTestObject(loop: f.loop), at: "/org/example/app/service0")
        func introspect(_ path: ObjectPath) throws -> (nodes: [String], interfaces: [String]) {
            let reply = try #require(f.call(path, "org.freedesktop.DBus.Introspectable", "Introspect"))
            let xml = try #require(try reply.get().arguments().first?.asString)
            let collector = XMLCollector()
            let parser = XMLParser(data: Data(xml.utf8))
            parser.delegate = collector
            #expect(parser.parse(), "XML does not parse: \(xml)")
            return (collector.childNodes, collector.interfaces)
        }
        #expect(try introspect("/").nodes == ["org"])
        #expect(try introspect("/org/example").nodes == ["app"])
        let root = try introspect("/org/example/app")
        #expect(root.nodes == ["service0"])
        #expect(root.interfaces.contains("org.freedesktop.DBus.ObjectManager"))
        let leaf = try introspect("/org/example/app/service0")
        #expect(leaf.nodes.isEmpty)
        #expect(leaf.interfaces.contains("org.example.Test") && leaf.interfaces.contains("org.freedesktop.DBus.Properties"))
    }

    @Test("signal subscription with arg0 delivers only matching signals; cancel stops delivery")
    func signalSubscription() throws {
        let f = try Fixture()
        var received: [String] = []
        let subscription = f.client.subscribe(sender: f.server.uniqueName, path: "/obj", interface: "org.example.Test",
                                              member: "Changed", arg0: "wanted") {
            received.append((try? $0.arguments())?.first?.asString ?? "?")
        }
        f.syncClientWithBus()
        try f.server.emitSignal(path: "/obj", interface: "org.example.Test", member: "Changed", arguments: [.string("other")])
        try f.server.emitSignal(path: "/obj", interface: "org.example.Test", member: "Changed", arguments: [.string("wanted")])
        #expect(f.loop.run(until: { !received.isEmpty }, timeout: .seconds(5)))
        f.syncClientWithBus()
        #expect(received == ["wanted"])
        subscription.cancel()
        try f.server.emitSignal(path: "/obj", interface: "org.example.Test", member: "Changed", arguments: [.string("wanted")])
        f.syncClientWithBus()
        #expect(received == ["wanted"])
    }

    @Test("PropertiesChanged carries interface, changed a{sv} (ay included) and invalidated names")
    func propertiesChanged() throws {
        let f = try Fixture()
        var arguments: [DBusValue] = []
        let subscription = f.client.subscribe(path: "/obj", interface: "org.freedesktop.DBus.Properties",
                                              member: "PropertiesChanged", arg0: "org.example.Test") {
            arguments = (try? $0.arguments()) ?? []
        }
        f.syncClientWithBus()
        try f.server.emitPropertiesChanged(path: "/obj", interface: "org.example.Test",
                                           changed: [("Value", .bytes([1, 2, 3]))], invalidated: ["Name"])
        #expect(f.loop.run(until: { !arguments.isEmpty }, timeout: .seconds(5)))
        #expect(arguments == [.string("org.example.Test"), .variantDictionary([("Value", .bytes([1, 2, 3]))]), .stringArray(["Name"])])
        subscription.cancel()
    }

    @Test("re-entrant handshake: A calls B, B calls back into A before replying, A answers while its call is pending")
    func callbackWhileCallPending() throws {
        let f = try Fixture()
        let a = f.client
        let b = f.server
        let appObject = TestObject(interfaces: [DBusInterface(name: "org.example.App", methods: [DBusMethod("Describe", outSignature: "s")])])
        appObject.handler = { $0.reply([.string("app tree")]) }
        try a.export(appObject, at: "/app")
        let manager = TestObject(interfaces: [DBusInterface(name: "org.example.Manager", methods: [DBusMethod("Register", inSignature: "o")])])
        manager.handler = { [unowned b] registration in
            b.call(destination: registration.sender, path: "/app", interface: "org.example.App", member: "Describe") { result in
                if case .success(let reply) = result, (try? reply.arguments()) == [.string("app tree")] {
                    registration.reply()
                } else {
                    registration.fail(.failed("callback failed: \(result)"))
                }
            }
        }
        try b.export(manager, at: "/manager")
        let result = roundTrip(f.loop, a, to: b.uniqueName, path: "/manager", interface: "org.example.Manager",
                               member: "Register", arguments: [.objectPath("/app")], timeout: .seconds(30))
        #expect(throws: Never.self) { try #require(result).get() }
    }

    @Test("typed fast paths over the bus: a{sv} argument, ay reply from a slice, sender check")
    func typedFastPaths() throws {
        let f = try Fixture()
        var seen: [(String, DBusValue)] = []
        var fromClient: [Bool] = []
        let (clientName, serverName) = (f.client.uniqueName, f.server.uniqueName)
        let object = TestObject(interfaces: [testInterface]) { call in
            fromClient.append(call.isSent(by: clientName))
            fromClient.append(call.isSent(by: serverName) || call.isSent(by: nil))
            do throws(DBusError) {
                seen = try call.variantDictionaryArgument(at: 0)
                let value: [UInt8] = [0, 1, 2, 3, 4, 5]
                call.reply(bytes: value[2...])
            } catch {
                call.fail(error)
            }
        }
        try f.server.export(object, at: "/obj")
        let options = DBusValue.variantDictionary([("device", .objectPath("/org/bluez/hci0/dev_1")), ("offset", .uint16(2))])
        let read = try #require(f.call("/obj", "org.example.Test", "ReadValue", [options]))
        #expect(try read.get().arguments() == [.bytes([2, 3, 4, 5])])
        #expect(try read.get().bytes(at: 0) == [2, 3, 4, 5])
        #expect(seen.map(\.0) == ["device", "offset"] && seen.last?.1 == .uint16(2))
        #expect(fromClient == [true, false])
    }

    @Test("ay replies: the same bytes again to the same caller (a copy of the previous reply) or to another caller, other bytes, empty")
    func repeatedByteReplies() throws {
        let f = try Fixture()
        let other = try BusConnection(address: f.bus.address, loop: f.loop)
        let object = TestObject(interfaces: [testInterface]) { call in
            do throws(DBusError) {
                let entries = try call.variantDictionaryArgument(at: 0)
                let count = Int(entries.first?.1.asUInt16 ?? 0)
                call.reply(bytes: (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ 1) })
            } catch {
                call.fail(error)
            }
        }
        try f.server.export(object, at: "/obj")
        for (count, caller) in [(4, f.client), (4, f.client), (4, other), (4, f.client), (5, f.client), (0, f.client), (0, f.client), (4, f.client), (600, f.client), (600, f.client)] {
            let options = DBusValue.variantDictionary([("n", .uint16(UInt16(count)))])
            let result = try #require(
                roundTrip(f.loop, caller, to: f.server.uniqueName, path: "/obj", interface: "org.example.Test",
                          member: "ReadValue", arguments: [options], timeout: .seconds(30)))
            let reply = try result.get()
            #expect(try reply.bytes(at: 0) == (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 3 &+ 1) })
            #expect(reply.destination == caller.uniqueName)
        }
    }

    @Test("calls alternate between objects and reach the right one; an unexported path is unknown at once")
    func dispatchAcrossObjects() throws {
        let f = try Fixture()
        func echoing(_ tag: String) -> TestObject {
            TestObject(interfaces: [testInterface]) { call in
                call.reply(call.member == "Echo" ? [.string(tag)] : [])
            }
        }
        try f.server.export(echoing("a"), at: "/a")
        try f.server.export(echoing("b"), at: "/b")
        var answers: [DBusValue] = []
        for path: ObjectPath in ["/a", "/a", "/b", "/a", "/b", "/b"] {
            let result = try #require(f.call(path, "org.example.Test", "Echo", [.string("x")]))
            answers += try result.get().arguments()
        }
        #expect(answers == ["a", "a", "b", "a", "b", "b"].map { .string($0) })
        // No interface named: the method is looked up by member alone.
        let bare = try #require(f.call("/b", nil, "Echo", [.string("x")]))
        #expect(try bare.get().arguments() == [.string("b")])
        f.server.unexport("/b")
        guard case .failure(let error)? = f.call("/b", "org.example.Test", "Echo", [.string("x")]) else {
            Issue.record("an unexported object answered")
            return
        }
        #expect(error.name == DBusError.Name.unknownObject)
        try f.server.export(echoing("c"), at: "/b")
        let again = try #require(f.call("/b", "org.example.Test", "Echo", [.string("x")]))
        #expect(try again.get().arguments() == [.string("c")])
    }

    @Test("benchmark: sequential ReadValue calls returning ay", .enabled(if: ProcessInfo.processInfo.environment["GATTD_BENCH"] == "1"))
    func benchmark() throws {
        let f = try Fixture()
        try f.server.export(makeTestObject(loop: f.loop), at: "/obj")
        let n = 10_000
        var done = 0
        let options = DBusValue.variantDictionary([("offset", .uint16(0))])
        func next() {
            f.client.call(destination: f.server.uniqueName, path: "/obj", interface: "org.example.Test",
                          member: "ReadValue", arguments: [options]) { result in
                if case .success = result { done += 1 } else { done = n + 1 }
                if done < n { next() }
            }
        }
        let start = ContinuousClock.now
        next()
        #expect(f.loop.run(until: { done >= n }, timeout: .seconds(120)))
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        #expect(done == n)
        print("BENCH \(n) calls in \(elapsed): \(Int(Double(n) / seconds)) calls/s, \(Int(seconds / Double(n) * 1e6)) µs/call")
    }
}

/// Collects `<node name=…>` children and `<interface name=…>` names of an introspection document.
private final class XMLCollector: NSObject, XMLParserDelegate {
    var depth = 0
    var childNodes: [String] = []
    var interfaces: [String] = []

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        depth += 1
        if name == "node", depth == 2, let child = attributes["name"] { childNodes.append(child) }
        if name == "interface", let interface = attributes["name"] { interfaces.append(interface) }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
    }
}
