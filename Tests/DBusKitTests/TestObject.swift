// SPDX-License-Identifier: MIT
import DBusKit
import Mainloop

/// A configurable exported object for bus tests.
final class TestObject: DBusObject {
    let interfaces: [DBusInterface]
    var values: [String: DBusValue]
    var handler: (MethodCall) -> Void
    var received: [MethodCall] = []

    init(interfaces: [DBusInterface], values: [String: DBusValue] = [:], handler: @escaping (MethodCall) -> Void = { _ in }) {
        self.interfaces = interfaces
        self.values = values
        self.handler = handler
    }

    func property(_ name: String, interface: String) -> DBusValue? { values[name] }

    func setProperty(_ name: String, interface: String, value: DBusValue) throws(DBusError) {
        values[name] = value
    }

    func handle(_ call: MethodCall) {
        handler(call)
    }
}

/// Runs `loop` until `call`'s reply arrives (or 5 s pass) and returns it.
func roundTrip(
    _ loop: EventLoop, _ connection: BusConnection, to destination: String, path: ObjectPath,
    interface: String?, member: String, arguments: [DBusValue] = [], timeout: Duration? = nil
) -> Result<Message, DBusError>? {
    var result: Result<Message, DBusError>?
    connection.call(destination: destination, path: path, interface: interface, member: member,
                    arguments: arguments, timeout: timeout) { result = $0 }
    loop.run(until: { result != nil }, timeout: .seconds(5))
    return result
}
