// SPDX-License-Identifier: MIT

public import BLEModel
internal import DBusKit
internal import Logging

extension Advertiser {
    /// Replaces advertisement `id`'s definition at run time (reload, control API).
    ///
    /// Changed properties go out as one `PropertiesChanged` on the advertisement object,
    /// which bluetoothd re-submits without a new registration; properties no longer set
    /// are listed as invalidated. `enabled` switching registers or unregisters it. An
    /// expired advertisement is registered again.
    /// - Returns: the problems that kept it from being applied (unknown id, byte budget);
    ///   empty when applied.
    @discardableResult
    public func update(id: String, definition: AdvertisementDefinition) -> [String] {
        guard let slot = slots.first(where: { $0.id == id }) else { return ["no advertisement has id \"\(id)\""] }
        let problems = AdvertisingPayload(definition).problems
        guard problems.isEmpty else { return problems }
        var definition = definition
        definition.id = id
        let before = slot.exported.properties
        slot.exported.definition = definition
        let after = slot.exported.properties
        let changed = after.filter { name, value in !before.contains { $0.0 == name && $0.1 == value } }
        let invalidated = before.map(\.0).filter { name in !after.contains { $0.0 == name } }
        if slot.state == .advertising && (!changed.isEmpty || !invalidated.isEmpty) {
            do {
                try connection.emitPropertiesChanged(
                    path: slot.exported.path, interface: BlueZNames.advertisement, changed: changed,
                    invalidated: invalidated)
                logger.info(
                    "advertisement updated",
                    metadata: metadata(slot).merging(["changed": "\((changed.map(\.0) + invalidated).joined(separator: ","))"]) { $1 })
            } catch {
                logger.error("could not announce the advertisement change", metadata: ["error": "\(error)"])
            }
        }
        if !definition.enabled {
            if slot.state == .advertising, let adapterPath {
                connection.call(
                    destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.advertisingManager,
                    member: "UnregisterAdvertisement", arguments: [.objectPath(slot.exported.path)]
                ) { _ in }
            }
            slot.state = .disabled
        } else if slot.state == .disabled || slot.state == .expired {
            slot.state = .waitingForAdapter
            registerAll()
        }
        return []
    }
}
