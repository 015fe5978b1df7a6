// SPDX-License-Identifier: MIT

import ControlAPI
import DBusKit
import DaemonCore
import Logging

extension ControlManager {
    /// `RegisterHandler(o object, as ids, a{sv} options)`: the caller's object serves the
    /// `operations` (reads, writes or both) of `ids` from now on (all or none: an unknown
    /// id, or an operation another program's handler holds, refuses the call). The claims
    /// end with `UnregisterHandler`, or when the caller leaves the bus.
    func registerHandler(
        object: ObjectPath, ids: [String], operations requested: Set<ControlHandlerOperation>, call: MethodCall
    ) {
        let operations = HandlerOperations(requested.map { operation in
            switch operation {
            case .read: HandlerOperations.read
            case .write: HandlerOperations.write
            }
        })
        guard let sender = call.sender else { return call.fail(.failed("no sender")) }
        let name = "\(sender) \(object.rawValue)"
        let handler = programHandlers[name]?.handler
            ?? ProgramHandler(sender: sender, path: object, connection: connection, logger: logger)
        switch service.handlers.claim(ids, operations: operations, for: handler) {
        case .unknownID(let id)?:
            return refuse(call, .unknownCharacteristic(id))
        case .alreadyClaimed(let id, let holder)?:
            return refuse(call, .alreadyClaimed(id: id, by: holder))
        case nil:
            break
        }
        if programHandlers[name] == nil {
            let watch = connection.whenNameLeaves(sender) { [weak self] in
                self?.endHandler(name, reason: "left the bus")
            }
            programHandlers[name] = (handler, watch)
        }
        logger.info(
            "handler registered",
            metadata: [
                "handler": "\(name)", "gatt.ids": "\(ids.joined(separator: ","))", "operations": "\(operations.names)",
            ])
        call.reply()
    }

    /// `UnregisterHandler(o object)`: the caller's object serves nothing any more.
    func unregisterHandler(object: ObjectPath, call: MethodCall) {
        let name = "\(call.sender ?? "") \(object.rawValue)"
        guard programHandlers[name] != nil else { return refuse(call, .notRegistered(name)) }
        endHandler(name, reason: "unregistered")
        call.reply()
    }

    private func endHandler(_ name: String, reason: String) {
        guard let entry = programHandlers.removeValue(forKey: name) else { return }
        entry.watch.cancel()
        let ids = service.handlers.release(entry.handler)
        logger.info(
            "handler gone; its attributes fall back to their definitions",
            metadata: ["handler": "\(name)", "reason": "\(reason)", "gatt.ids": "\(ids.joined(separator: ","))"])
    }
}
