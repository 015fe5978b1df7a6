// SPDX-License-Identifier: MIT

import ControlAPI
import DBusKit
import Logging

extension ControlManager {
    /// `RequestName` reply codes (D-Bus specification).
    private enum RequestNameReply {
        static let primaryOwner: UInt32 = 1
        static let alreadyOwner: UInt32 = 4
    }

    /// `DBUS_NAME_FLAG_DO_NOT_QUEUE`: fail at once rather than wait for the owner to leave.
    private static let doNotQueue: UInt32 = 4

    /// Exports the manager, starts forwarding value signals and asks for `org.gattd`
    /// without waiting. Call once, on the loop, before the registrar starts.
    public func start() {
        guard nameState == .notStarted else { return }
        do {
            try connection.export(self, at: ControlNames.managerPath)
        } catch {
            giveUp("cannot export \(ControlNames.managerPath): \(error)")
            return
        }
        observeDatabase()
        observeReadiness()
        nameState = .requesting
        connection.call(
            destination: Freedesktop.bus, path: Freedesktop.busPath, interface: Freedesktop.busInterface,
            member: Freedesktop.requestName, arguments: [.string(busName), .uint32(Self.doNotQueue)]
        ) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let reply):
                let code = (try? reply.arguments())?.first?.asUInt32
                if code == RequestNameReply.primaryOwner || code == RequestNameReply.alreadyOwner {
                    self.nameState = .owned
                    self.logger.info("control API ready", metadata: ["dbus.name": "\(busName)"])
                } else {
                    self.giveUp("\(busName) is owned by another process")
                }
            case .failure(let error):
                self.giveUp("the bus refused \(busName): \(error)")
            }
        }
    }

    private func giveUp(_ reason: String) {
        connection.unexport(ControlNames.managerPath)
        nameState = .unavailable(reason)
        logger.warning(
            "serving GATT without the control API", metadata: ["dbus.name": "\(busName)", "reason": "\(reason)"])
    }
}
