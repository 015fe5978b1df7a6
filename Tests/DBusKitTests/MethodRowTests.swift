// SPDX-License-Identifier: MIT
import DBusKit
import Mainloop
import TestSupport
import Testing

/// An object whose methods all carry their handlers (no `handle(_:)` of its own).
private final class Counter: DBusObject {
    var count: UInt32 = 0
    var handled: [String] = []

    let interfaces = [
        DBusInterface(
            name: "org.example.Counter",
            methods: [
                DBusMethod("Add", inSignature: "u", outSignature: "u") { (counter: Counter, call) in
                    counter.handled.append("Add")
                    counter.count += (try? call.arguments())?.first?.asUInt32 ?? 0
                    call.reply([.uint32(counter.count)])
                },
                DBusMethod("Reset") { (counter: Counter, call) in
                    counter.handled.append("Reset")
                    counter.count = 0
                    call.reply()
                },
                // No handler: the default `handle(_:)` refuses it.
                DBusMethod("Unserved"),
            ])
    ]
}

/// Another type, to try a row on an object its handler was not written for.
private final class Other: DBusObject {
    let interfaces = [
        DBusInterface(name: "org.example.Other", methods: [DBusMethod("Reset") { (_: Counter, call) in call.reply() }])
    ]
}

@Suite("Method rows: one row = name, signature, handler", .serialized, .enabled(if: PrivateBus.isAvailable))
struct MethodRowTests {
    @Test("each call runs its row's handler with the exported object; the signature is still checked")
    func rowsRunTheirHandlers() throws {
        let bus = try PrivateBus()
        let loop = try EventLoop()
        let server = try BusConnection(address: bus.address, loop: loop)
        let client = try BusConnection(address: bus.address, loop: loop)
        let counter = Counter()
        try server.export(counter, at: "/counter")
        func call(_ member: String, _ arguments: [DBusValue] = []) throws -> Result<Message, DBusError> {
            try #require(roundTrip(
                loop, client, to: server.uniqueName, path: "/counter", interface: "org.example.Counter",
                member: member, arguments: arguments))
        }
        #expect(try call("Add", [.uint32(2)]).get().arguments() == [.uint32(2)])
        #expect(try call("Add", [.uint32(3)]).get().arguments() == [.uint32(5)])
        #expect(throws: DBusError.self) { try call("Add", [.string("x")]).get() }
        _ = try call("Reset").get()
        #expect(counter.count == 0)
        #expect(counter.handled == ["Add", "Add", "Reset"])
        let unserved = try call("Unserved")
        #expect(throws: DBusError.unknownMethod("no handler for Unserved")) { try unserved.get() }
    }

    @Test("export refuses a row whose handler is written for another type, naming it")
    func exportRefusesAForeignHandler() throws {
        let bus = try PrivateBus()
        let loop = try EventLoop()
        let server = try BusConnection(address: bus.address, loop: loop)
        #expect(throws: DBusError.invalidArgs("org.example.Other.Reset's handler takes Counter, not Other")) {
            try server.export(Other(), at: "/other")
        }
        #expect(server.exportedObject(at: "/other") == nil)
    }
}
