// SPDX-License-Identifier: MIT

import ControlAPI
import DBusKit
import Mainloop

/// A system-bus connection to gattd's manager; each call runs a small event loop until
/// its reply arrives (DBusKit has no blocking calls).
final class ControlClient {
    let loop: EventLoop
    let connection: BusConnection
    /// How long a call may wait for gattd (a SetValue waits for an fsync).
    static let callTimeout: Duration = .seconds(10)

    init() throws(Failure) {
        do {
            loop = try EventLoop()
        } catch {
            throw Failure(.unreachable, "cannot create an event loop: \(error)")
        }
        do throws(DBusError) {
            connection = try BusConnection.system(loop: loop)
        } catch {
            throw Failure(.unreachable, "cannot connect to the system bus: \(error.message)")
        }
    }

    /// Calls `method` on org.gattd.Manager1 and returns the reply's arguments.
    func call(_ method: ControlMethod, _ arguments: [DBusValue] = []) throws(Failure) -> [DBusValue] {
        let member = method.rawValue
        var result: Result<Message, DBusError>?
        connection.call(
            destination: ControlTarget.busName, path: ControlNames.managerPath, interface: ControlNames.managerInterface,
            member: member, arguments: arguments, timeout: Self.callTimeout
        ) { result = $0 }
        // The call's own timeout answers first; the loop's is a backstop.
        _ = loop.run(until: { result != nil }, timeout: Self.callTimeout + .seconds(5))
        switch result {
        case .success(let reply)?:
            do throws(DBusError) {
                return try reply.arguments()
            } catch {
                throw Failure(.refused, "unreadable reply to \(member): \(error.message)")
            }
        case .failure(let error)?:
            throw Failure(error)
        case nil:
            throw Failure(.unreachable, "gattd did not answer \(member)")
        }
    }

    /// `GetStatus` as (name, value) pairs.
    func status() throws(Failure) -> [(String, DBusValue)] {
        guard let entries = try call(.getStatus).first?.variantDictionaryEntries else {
            throw Failure(.refused, "GetStatus returned no dictionary")
        }
        return entries
    }
}
