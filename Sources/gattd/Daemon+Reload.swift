// SPDX-License-Identifier: MIT

import BLEModel
import BlueZ
import DBusKit
import DaemonCore
import Logging

/// SIGHUP: read the configuration again and apply what changed with the least disruption.
///
/// - An invalid file changes nothing: every issue is logged at error level with its JSON
///   path, STATUS= says the reload failed, and READY=1 ends the reload.
/// - Changed advertisements are updated in place (`PropertiesChanged`), added ones are
///   registered, removed ones unregistered.
/// - New initial values go to attributes nobody has written, in place.
/// - A changed GATT tree (or a characteristic's `persist`/`update`/`onWrite`/
///   `notifyIntervalMs`) rebuilds the database, carrying over written values that still
///   fit; of the applications (one per service, `GattApplication`), those bluetoothd would
///   read differently are unregistered, exported again and registered, added ones
///   registered, removed ones unregistered, and the others stay registered untouched;
///   READY=1 waits until the registrar has settled, as at start.
/// - `adapter`, `alias` and `security` take effect at the next start (logged as a warning).
extension Daemon {
    func reload() {
        perform(readiness.hangup())
    }

    /// RELOADING=1 has gone out: read the file and apply it; `readiness` hears how it ended.
    func reloadConfiguration() {
        logger.info("reloading", metadata: ["config": "\(configPath)"])
        switch ConfigurationFile.load(path: configPath) {
        case .failure(let errors):
            for issue in errors.issues {
                let metadata: Logger.Metadata = ["config": "\(configPath)", "config.path": "\(issue.path)"]
                if issue.severity == .error {
                    logger.error("\(issue.located(in: configPath))", metadata: metadata)
                } else {
                    logger.warning("\(issue.located(in: configPath))", metadata: metadata)
                }
            }
            let count = errors.errors.count
            let status =
                "reload failed: \(plural(count, "error")) in \(configPath); still serving the previous configuration"
            logger.error("\(status)")
            perform(readiness.reloadFinished(status: .text(status)))
        case .success(let loaded):
            for warning in loaded.warnings {
                logger.warning("\(warning.located(in: configPath))", metadata: ["config.path": "\(warning.path)"])
            }
            apply(ConfigurationDiff(from: configuration, to: loaded.configuration), loaded.configuration)
        }
    }

    private func apply(_ diff: ConfigurationDiff, _ new: Configuration) {
        logger.info("reloaded: \(diff.summary)")
        configuration = new
        // Channels change only at a restart, but a channel's program may have been
        // installed or removed since: say so now rather than at the next connection.
        channels.checkPrograms()
        if !diff.restartOnly.isEmpty {
            logger.warning(
                "changed settings take effect at the next start",
                metadata: ["settings": "\(diff.restartOnly.joined(separator: ","))"])
        }
        applyAdvertisements(diff)
        guard diff.needsNewApplication else {
            control.reconfigure(configuration: served(new))
            for change in diff.initialValues {
                if let attribute = runtime.database[change.id] {
                    runtime.database.redefineInitialValue(attribute, to: change.value)
                }
            }
            perform(readiness.reloadFinished(status: .current))
            return
        }
        flushState()
        // Before anything leaves bluetoothd (conservatively also when the reload ends up
        // leaving every service's application alone: only a warning for centrals away).
        centrals.tableChanged()
        let served = served(new)
        registrar.replaceApplication(
            leaving: { [unowned self] in self.application.groupsLeaving(for: served) },
            rebuild: { [unowned self] in self.rebuildApplication(new) })
        // Registered before: READY=1 once registered again. Nothing was registered (no
        // bluetoothd or adapter): the tree was swapped at once and this sends it now.
        perform(readiness.reloadAwaitsRegistration(registration))
    }

    private func applyAdvertisements(_ diff: ConfigurationDiff) {
        for id in diff.removedAdvertisements { advertiser.remove(id: id) }
        for definition in diff.changedAdvertisements {
            for problem in advertiser.update(id: definition.id, definition: definition) {
                logger.error("advertisement not updated: \(problem)", metadata: ["adv.id": "\(definition.id)"])
            }
        }
        for definition in diff.addedAdvertisements {
            do throws(DBusError) {
                try advertiser.add(definition)
            } catch {
                logger.error(
                    "cannot export the new advertisement",
                    metadata: ["adv.id": "\(definition.id)", "error": "\(error.name): \(error.message)"])
            }
        }
    }

    /// Runs while the application is not registered: a new runtime (written values,
    /// counters and advertisement states carried over), served, exported, the old one stopped.
    private func rebuildApplication(_ file: Configuration) {
        let new = served(file)
        let previous = runtime
        let next = factory.make(new, after: previous)
        service.serve(next)
        do throws(DBusError) {
            try application.rebuild(configuration: new, service: service)
        } catch {
            logger.critical(
                "cannot export the reloaded application", metadata: ["error": "\(error.name): \(error.message)"])
            exitCode = 1
            loop.stop()
            return
        }
        previous.stop()
        next.start()
        control.reconfigure(configuration: new)
        flushState()
    }
}
