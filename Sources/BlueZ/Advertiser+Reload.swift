// SPDX-License-Identifier: MIT

public import BLEModel
public import DBusKit
internal import Logging

extension Advertiser {
    /// Adds advertisement `definition` at run time (reload): exports it and, when an
    /// adapter is in use and it is enabled, registers it.
    /// - Throws: when the object cannot be exported (its path is taken).
    public func add(_ definition: AdvertisementDefinition) throws(DBusError) {
        var used = Set(slots.map(\.exported.path))
        let path = Self.rootPath.appendingUniqueElement(for: definition.id, used: &used)
        let exported = ExportedAdvertisement(path: path, definition: definition, session: session)
        let slot = Slot(exported: exported, state: definition.enabled ? .waitingForAdapter : .disabled)
        exported.onRelease = { [unowned self, unowned slot] in self.released(slot) }
        slot.onChange = { [unowned self] in self.onStateChange?($0.id, $0.state) }
        try connection.export(exported, at: path)
        slots.append(slot)
        if adapterPath != nil && definition.enabled { registerAll() }
    }

    /// Removes advertisement `id` (reload): unregisters it if it is on air and takes its
    /// object off the bus. Unknown ids are ignored.
    public func remove(id: String) {
        guard let index = slots.firstIndex(where: { $0.id == id }) else { return }
        let slot = slots.remove(at: index)
        if slot.state == .advertising || slot.state == .registering, let adapterPath {
            connection.call(
                destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.advertisingManager,
                member: "UnregisterAdvertisement", arguments: [.objectPath(slot.exported.path)], timeout: .seconds(1)
            ) { [logger] result in
                if case .failure(let error) = result {
                    logger.warning(
                        "could not unregister a removed advertisement",
                        metadata: ["adv.id": "\(id)", "error": "\(error)"])
                }
            }
        }
        slot.state = .disabled
        connection.unexport(slot.exported.path)
        logger.info("advertisement removed", metadata: ["adv.id": "\(id)"])
    }
}
