// SPDX-License-Identifier: MIT

import DBusKit
import DaemonCore
import Logging

extension ControlManager {
    /// Emits `ValueChanged` for every change of a characteristic's value and
    /// `ValueWritten` for every accepted write from a central (changed or not), while gattd
    /// owns `org.gattd`.
    func observeDatabase() {
        database.observeChanges { [weak self] attribute, origin in
            self?.emit("ValueChanged", attribute, detail: Self.describe(origin))
        }
        database.observeWrites { [weak self] attribute, origin in
            guard case .central(let device) = origin else { return }
            self?.emit("ValueWritten", attribute, detail: device ?? "")
        }
    }

    private func emit(_ member: String, _ attribute: Attribute, detail: String) {
        guard nameState == .owned, attribute.isCharacteristic else { return }
        do {
            try connection.emitSignal(
                path: ControlNames.managerPath, interface: ControlNames.managerInterface, member: member,
                arguments: [.string(attribute.id), .bytes(attribute.value), .string(detail)])
        } catch {
            logger.warning("could not emit \(member)", metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
        }
    }

    /// The `origin` argument of `ValueChanged`: `central`, `control`, `timer`, `restored`,
    /// `configuration` (a reload changed an initial value nobody had written).
    static func describe(_ origin: ValueChangeOrigin) -> String {
        switch origin {
        case .central: "central"
        case .control: "control"
        case .timer: "timer"
        case .restored: "restored"
        case .configuration: "configuration"
        }
    }
}
