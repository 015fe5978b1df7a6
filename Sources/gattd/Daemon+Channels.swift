// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Glibc
import Logging
import SystemCalls

/// The definition's L2CAP channels at start: listeners made before the GATT tree is built,
/// so the PSM characteristic is served exactly for the channels that listen.
extension Daemon {
    /// The drop-in that lets gattd make Bluetooth sockets, as the package installs it.
    static let channelsDropIn = "/usr/share/doc/gattd/systemd/channels.conf"

    /// Makes the listeners (PSMs kept from the last run asked for again), keeps the PSMs the
    /// kernel picked, logs every channel that cannot listen with what to do about it, and
    /// returns `configuration` with the PSM characteristics of the channels that listen.
    static func openChannels(
        _ configuration: Configuration, server: ChannelServer, psmFile: ChannelPSMFile, logger: Logger
    ) -> Configuration {
        guard !configuration.channels.isEmpty else { return configuration }
        let outcomes = server.listen(saved: psmFile.load())
        for channel in configuration.channels {
            guard case .failed(let error) = outcomes[channel.id] else { continue }
            logger.error(
                "channel cannot listen: \(error); \(advice(for: error)); no PSM characteristic is served for it",
                metadata: ["channel": "\(channel.id)", "service": "\(channel.service)"])
        }
        let picked = server.psms.filter { id, _ in configuration.channels.contains { $0.id == id && $0.psm == nil } }
        if !picked.isEmpty {
            do throws(StateStoreError) {
                try psmFile.save(picked)
            } catch {
                logger.error(
                    "cannot keep the channels' PSMs; a restart may pick others", metadata: ["error": "\(error)"])
            }
        }
        return configuration.addingPSMCharacteristics(server.psms)
    }

    /// What is served for a configuration read again: channels change only at a restart,
    /// so the tree keeps the PSM characteristics of the channels that listen now.
    func served(_ file: Configuration) -> Configuration {
        var running = file
        running.channels = channels.definitions
        return running.addingPSMCharacteristics(channels.psms)
    }

    /// What a failed listener's error means for the person running gattd.
    static func advice(for error: SystemCallError) -> String {
        switch error.code {
        case EAFNOSUPPORT:
            "the kernel makes Bluetooth sockets only in the host's network namespace (and this kernel may have no "
                + "Bluetooth at all): under systemd install the drop-in \(channelsDropIn) as "
                + "/etc/systemd/system/gattd.service.d/channels.conf and restart gattd (docs/channels.md)"
        case EPERM, EACCES:
            "the sandbox refuses AF_BLUETOOTH: install the drop-in \(channelsDropIn) as "
                + "/etc/systemd/system/gattd.service.d/channels.conf and restart gattd (docs/channels.md)"
        case EADDRINUSE:
            "another program listens on that PSM: choose another \"psm\" or leave it out"
        default:
            "see docs/channels.md"
        }
    }
}
