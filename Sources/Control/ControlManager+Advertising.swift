// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import ControlAPI
import DBusKit
import DaemonCore
import Logging

extension ControlManager {
    /// Applies the on/off states saved by earlier `StartAdvertising`/`StopAdvertising`
    /// calls over the configuration's `enabled`; call before the registrar starts so a
    /// stopped advertisement is never registered.
    public func restoreAdvertisementStates() {
        guard let persistence, let advertising = port.advertising else { return }
        for id in advertisementOrder {
            guard let data = persistence.savedAdvertisementData(id: id), let base = advertisements[id] else { continue }
            switch AdvertisementChanges.apply(Array(data.utf8), to: base) {
            case .success(let changed) where advertising.update(id, changed.definition).isEmpty:
                advertisements[id] = changed.definition
                logger.info("advertising data restored", metadata: ["adv.id": "\(id)", "changes": "\(data)"])
            case .success:
                logger.warning("could not restore the advertising data", metadata: ["adv.id": "\(id)"])
            case .failure(let errors):
                logger.warning(
                    "saved advertising data no longer fits the definition; dropped",
                    metadata: ["adv.id": "\(id)", "problems": "\(errors.issues.map(\.description).joined(separator: "; "))"])
                persistence.recordAdvertisementData(nil, id: id)
            }
        }
        for id in advertisementOrder {
            guard var definition = advertisements[id], let saved = persistence.savedAdvertisementEnabled(id: id),
                saved != definition.enabled
            else { continue }
            definition.enabled = saved
            let problems = advertising.update(id, definition)
            if problems.isEmpty {
                advertisements[id] = definition
                logger.info("advertisement state restored", metadata: ["adv.id": "\(id)", "enabled": "\(saved)"])
            } else {
                logger.warning(
                    "could not restore the advertisement state",
                    metadata: ["adv.id": "\(id)", "problems": "\(problems.joined(separator: "; "))"])
            }
        }
    }

    /// Switches advertisement `id` on or off and records that, so it survives a restart;
    /// replies once the record is saved. On a failed save the switch is undone.
    func setAdvertising(id: String, enabled: Bool, call: MethodCall) {
        guard let advertising = port.advertising, var definition = advertisements[id] else {
            refuse(call, .unknownAdvertisement(id))
            return
        }
        let previous = definition
        definition.enabled = enabled
        let problems = advertising.update(id, definition)
        guard problems.isEmpty else {
            refuse(call, .failed("advertisement \(id): \(problems.joined(separator: "; "))"))
            return
        }
        advertisements[id] = definition
        logger.info(
            enabled ? "advertising started" : "advertising stopped",
            metadata: ["adv.id": "\(id)", "sender": "\(call.sender ?? "?")"])
        guard let persistence else {
            call.reply()
            return
        }
        persistence.recordAdvertisementEnabled(enabled, id: id) { [weak self] saved in
            switch saved {
            case .success:
                call.reply()
            case .failure(let error):
                guard let self else { return }
                if previous.enabled != enabled {
                    _ = advertising.update(id, previous)
                    self.advertisements[id] = previous
                }
                let refusal = ControlError.notSaved(id: id, reason: "\(error)")
                self.lastError = refusal.message
                self.refuse(call, refusal)
            }
        }
    }
}

extension ControlManager {
    /// `SetAdvertisementData(s id, s changes, b persist)`: changes an advertisement's data
    /// while it is on air (`AdvertisementChanges`: the definition's keys and syntax, the
    /// same rules and byte budget as `--check`); bluetoothd gets one `PropertiesChanged`,
    /// no new registration. With `persist` the changes are kept for restarts (the reply
    /// waits for the state file); without, a restart brings back what was kept before.
    func setAdvertisementData(id: String, changes: String, persist: Bool, call: MethodCall) {
        guard let advertising = port.advertising, let base = advertisements[id] else { return refuse(call, .unknownAdvertisement(id)) }
        let kept = persistence?.savedAdvertisementData(id: id)
        let changed: (definition: AdvertisementDefinition, folded: String)
        switch AdvertisementChanges.apply(Array(changes.utf8), to: base, folding: kept) {
        case .success(let result): changed = result
        case .failure(let errors):
            return refuse(
                call, .invalidAdvertisement(id: id, problems: errors.issues.map(\.description)))
        }
        let problems = advertising.update(id, changed.definition)
        guard problems.isEmpty else { return refuse(call, .invalidAdvertisement(id: id, problems: problems)) }
        advertisements[id] = changed.definition
        logger.info("advertising data changed", metadata: ["adv.id": "\(id)", "changes": "\(changes)", "persist": "\(persist)"])
        guard persist, let persistence else { return call.reply() }
        persistence.recordAdvertisementData(changed.folded, id: id) { [weak self] saved in
            switch saved {
            case .success:
                call.reply()
            case .failure(let error):
                guard let self else { return }
                _ = advertising.update(id, base)
                advertisements[id] = base
                let refusal = ControlError.notSaved(id: id, reason: "\(error)")
                lastError = refusal.message
                refuse(call, refusal)
            }
        }
    }
}
