// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import DBusKit
import DaemonCore
import Logging

extension ControlManager {
    /// Applies the on/off states saved by earlier `StartAdvertising`/`StopAdvertising`
    /// calls over the configuration's `enabled`; call before the registrar starts so a
    /// stopped advertisement is never registered.
    public func restoreAdvertisementStates() {
        guard let persistence, let advertiser else { return }
        for id in advertisementOrder {
            guard var definition = advertisements[id], let saved = persistence.savedAdvertisementEnabled(id: id),
                saved != definition.enabled
            else { continue }
            definition.enabled = saved
            let problems = advertiser.update(id: id, definition: definition)
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
        guard let advertiser, var definition = advertisements[id] else {
            refuse(call, .unknownAdvertisement(id))
            return
        }
        let previous = definition
        definition.enabled = enabled
        let problems = advertiser.update(id: id, definition: definition)
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
                    advertiser.update(id: id, definition: previous)
                    self.advertisements[id] = previous
                }
                let refusal = ControlError.notSaved(id: id, reason: "\(error)")
                self.lastError = refusal.message
                self.refuse(call, refusal)
            }
        }
    }
}
