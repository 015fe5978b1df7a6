// SPDX-License-Identifier: MIT

internal import DBusKit
internal import Logging

extension Advertiser {
    /// The adapter's `Powered` changed (`BlueZSession`).
    func poweredChanged(_ powered: Bool) {
        guard powered else {
            logger.info("adapter powered off; bluetoothd keeps the advertisements registered")
            return
        }
        readManager { [unowned self] instances in
            let ours = self.slots.filter { $0.state == .advertising }
            if instances.active < ours.count {
                let text = "adapter powered on with \(instances.active) active advertising instances for gattd's "
                    + "\(ours.count); registering them again"
                self.logger.warning("\(text)")
                for slot in ours { self.reregister(slot) }
            } else {
                self.logger.info(
                    "adapter powered on; advertising still active",
                    metadata: ["active": "\(instances.active)", "gattd": "\(ours.count)"])
            }
            self.registerAll()
        }
    }

    /// A central under the adapter disconnected (`Device1.Connected` false).
    func centralDisconnected(_ device: ObjectPath) {
        let again = slots.filter { $0.state == .advertising && $0.definition.readvertiseAfterDisconnect }
        guard !again.isEmpty else { return }
        logger.info(
            "central disconnected; registering advertisements again",
            metadata: ["device": "\(device)", "adv.ids": "\(again.map(\.id).joined(separator: ","))"])
        for slot in again { reregister(slot) }
    }
}
