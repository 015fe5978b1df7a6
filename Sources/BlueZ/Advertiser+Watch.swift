// SPDX-License-Identifier: MIT

internal import DBusKit
internal import Logging

extension Advertiser {
    /// Signals about the adapter that matter to advertising: `Powered`, the manager
    /// interface appearing late, and centrals disconnecting.
    func watchAdapter(_ path: ObjectPath) {
        adapterSubscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, path: path, interface: Freedesktop.properties,
                member: Freedesktop.propertiesChanged, arg0: BlueZNames.adapter
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count >= 2,
                    let powered = arguments[1].variantDictionaryValue("Powered")?.asBool
                else { return }
                self.poweredChanged(powered)
            })
        adapterSubscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, path: .root, interface: Freedesktop.objectManager,
                member: Freedesktop.interfacesAdded
            ) { [unowned self] message in
                guard let arguments = try? message.arguments(), arguments.count == 2,
                    arguments[0].asObjectPath == path,
                    arguments[1].dictionaryEntries?.contains(where: { $0.key.asString == BlueZNames.advertisingManager })
                        == true
                else { return }
                self.logger.info("LEAdvertisingManager1 appeared", metadata: ["bluez.path": "\(path)"])
                self.registerAll()
            })
        adapterSubscriptions.append(
            connection.subscribe(
                sender: BlueZNames.service, interface: Freedesktop.properties, member: Freedesktop.propertiesChanged,
                arg0: BlueZNames.device
            ) { [unowned self] message in
                guard let device = message.path, device.isDescendant(of: path),
                    let arguments = try? message.arguments(), arguments.count >= 2,
                    arguments[1].variantDictionaryValue("Connected")?.asBool == false
                else { return }
                self.centralDisconnected(device)
            })
    }

    private func poweredChanged(_ powered: Bool) {
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

    private func centralDisconnected(_ device: ObjectPath) {
        let again = slots.filter { $0.state == .advertising && $0.definition.readvertiseAfterDisconnect }
        guard !again.isEmpty else { return }
        logger.info(
            "central disconnected; registering advertisements again",
            metadata: ["device": "\(device)", "adv.ids": "\(again.map(\.id).joined(separator: ","))"])
        for slot in again { reregister(slot) }
    }
}
