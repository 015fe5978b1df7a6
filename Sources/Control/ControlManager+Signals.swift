// SPDX-License-Identifier: MIT

import ControlAPI
import DBusKit
import DaemonCore
import Logging

extension ControlManager {
    /// Emits `ValueChanged` for every change of a characteristic's value and
    /// `ValueWritten` for every accepted write from a central (changed or not), while gattd
    /// owns `org.gattd` and at least one client has called `Subscribe()`.
    func observeDatabase() {
        guard observedDatabase !== database else { return }
        observedDatabase = database
        database.observeChanges { [weak self] attribute, origin in
            self?.emit(.valueChanged, attribute, detail: Self.describe(origin))
        }
        database.observeWrites { [weak self] attribute, origin in
            guard let self, case .central(let device) = origin else { return }
            // The central by its address as bluetoothd gives it now, beside the object path.
            let address = device.flatMap { self.port.centrals?.address($0) } ?? ""
            self.emit(.valueWritten, attribute, detail: device ?? "", address: address)
        }
        database.observeSubscriptions { [weak self] attribute in self?.subscriptionEvent(attribute) }
    }

    /// `Subscribe()`: from now on the caller gets `ValueWritten`/`ValueChanged` (as
    /// systemd's Manager does, signals cost nothing while nobody listens). Idempotent;
    /// ends with `Unsubscribe()` or when the caller leaves the bus.
    func subscribe(_ call: MethodCall) {
        guard let sender = call.sender else { return call.fail(.failed("no sender")) }
        if watchers[sender] == nil {
            watchers[sender] = connection.whenNameLeaves(sender) { [weak self] in self?.forget(sender) }
            logger.debug("control client subscribed", metadata: ["sender": "\(sender)"])
        }
        call.reply()
    }

    func unsubscribe(_ call: MethodCall) {
        if let sender = call.sender { forget(sender) }
        call.reply()
    }

    private func forget(_ sender: String) {
        watchers.removeValue(forKey: sender)?.cancel()
    }

    private func emit(_ signal: ControlSignal, _ attribute: Attribute, detail: String, address: String? = nil) {
        guard nameState == .owned, !watchers.isEmpty, attribute.isCharacteristic else { return }
        var arguments: [DBusValue] = [.string(attribute.id), .bytes(attribute.value), .string(detail)]
        if let address { arguments.append(.string(address)) }
        do {
            try connection.emitSignal(
                path: ControlNames.managerPath, interface: ControlNames.managerInterface, member: signal.rawValue,
                arguments: arguments)
        } catch {
            logger.warning("could not emit \(signal.rawValue)", metadata: ["gatt.id": "\(attribute.id)", "error": "\(error)"])
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
