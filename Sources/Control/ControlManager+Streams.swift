// SPDX-License-Identifier: MIT

import ControlAPI
import DBusKit
import DaemonCore

extension ControlManager {
    /// `ReadyToUpdate(s id)`: a characteristic with `delivery: "all"` whose `SetValue` was
    /// refused with `QueueFull` has room in its queue again (CoreBluetooth's
    /// `peripheralManagerIsReady(toUpdateSubscribers:)`). Sent to subscribed clients.
    func observeReadiness() {
        service.onReadyToUpdate = { [weak self] attribute in
            guard let self, nameState == .owned, !watchers.isEmpty else { return }
            do {
                try connection.emitSignal(
                    path: ControlNames.managerPath, interface: ControlNames.managerInterface, member: ControlSignal.readyToUpdate.rawValue,
                    arguments: [.string(attribute.id)])
            } catch {
                logger.warning(
                    "could not emit ReadyToUpdate", metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
            }
        }
    }
}
