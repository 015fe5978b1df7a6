// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import Logging

/// What `LEAdvertisingManager1` reports about instances.
struct AdvertisingInstances {
    /// `SupportedInstances`: how many are still free (docs/bluez-contract.md §8).
    var free: Int
    /// `ActiveInstances`: how many are registered, by anyone.
    var active: Int
}

extension Advertiser {
    /// Reads the manager's properties; on failure (the interface may appear after
    /// `Adapter1`, docs/bluez-contract.md §7) waits for it in `InterfacesAdded`.
    func readManager(_ then: @escaping (AdvertisingInstances) -> Void) {
        guard let adapterPath else { return }
        let attempt = generation
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: Freedesktop.properties, member: Freedesktop.getAll,
            arguments: [.string(BlueZNames.advertisingManager)]
        ) { [unowned self] result in
            guard self.isCurrent(attempt) else { return }
            let properties = (try? result.get().arguments())?.first
            guard let properties, let free = properties.variantDictionaryValue("SupportedInstances")?.asByte,
                let active = properties.variantDictionaryValue("ActiveInstances")?.asByte
            else {
                self.logger.info(
                    "waiting for LEAdvertisingManager1 on the adapter", metadata: ["bluez.path": "\(adapterPath)"])
                return
            }
            self.experimentalFeatures = properties.variantDictionaryValue("SupportedCapabilities") != nil
            then(AdvertisingInstances(free: Int(free), active: Int(active)))
        }
    }

    /// Registers every enabled advertisement that is not on air, first saying in plain
    /// words when the controller has fewer free instances than that.
    /// Several events can ask at once (after a bluetoothd restart: the adapter, its advertising
    /// manager and `Powered` come one after the other), so the slots are chosen again when the
    /// answer comes: one that an earlier answer already registered is not registered twice.
    func registerAll() {
        guard slots.contains(where: isWanted) else { return }
        readManager { [unowned self] instances in
            let wanted = self.slots.filter(self.isWanted)
            guard !wanted.isEmpty else { return }
            if wanted.count > instances.free {
                let names = wanted.map(\.id).joined(separator: ", ")
                let text =
                    "the configuration asks for \(wanted.count) advertisements (\(names)) but the controller has only "
                    + "\(instances.free) free advertising instance\(instances.free == 1 ? "" : "s") "
                    + "(\(instances.active) in use); the last \(wanted.count - instances.free) will be refused"
                self.logger.warning(
                    "\(text)",
                    metadata: ["adapter": "\(self.adapterPath?.elements.last ?? "")"])
            }
            for slot in wanted { self.register(slot) }
        }
    }

    private func isWanted(_ slot: Slot) -> Bool {
        slot.definition.enabled && (slot.state == .waitingForAdapter || isRefused(slot.state))
    }

    private func isRefused(_ state: Advertiser.State) -> Bool {
        if case .refused = state { return true }
        return false
    }

    func register(_ slot: Slot) {
        guard let adapterPath else { return }
        let attempt = generation
        slot.state = .registering
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.advertisingManager,
            member: "RegisterAdvertisement", arguments: [.objectPath(slot.exported.path), .variantDictionary([])]
        ) { [unowned self] result in
            guard self.isCurrent(attempt) else { return }
            switch result.registered {
            case .success:
                self.registered(slot)
            case .failure(let error):
                self.refused(slot, error)
            }
        }
    }

    private func registered(_ slot: Slot) {
        slot.state = .advertising
        slot.registeredAt = clock.now()
        logger.info("advertisement registered", metadata: metadata(slot))
        let ignored = slot.definition.experimentalOnlySettings
        if !ignored.isEmpty && !experimentalFeatures {
            let text = "\(ignored.joined(separator: ", ")) of advertisement \(slot.id) are ignored by this BlueZ "
                + "(5.66 honours them only when bluetoothd runs with experimental features, -E)"
            logger.warning("\(text)", metadata: metadata(slot))
        }
        onSettled?()
    }

    private func refused(_ slot: Slot, _ error: DBusError) {
        var reason: String
        if error.name == BlueZError.notPermitted {
            reason = "the controller has no free advertising instance (bluetoothd: \"\(error.message)\"); another "
                + "program or an earlier gattd may hold them, or the configuration enables more than the adapter "
                + "supports"
        } else if error.message.hasPrefix("Failed to parse advertisement") {
            reason = "bluetoothd could not parse it (\"\(error.message)\"): "
                + AdvertisingPayload(slot.definition).summary
        } else {
            reason = "\(error.name): \(error.message)"
        }
        var metadata = metadata(slot)
        let refusal = Refusal(subject: .advertisement, errorName: error.name, message: error.message)
        if let cause = KnownProblems.cause(of: refusal, kernel: kernel, bluetoothd: nil) {
            reason += "; " + KnownProblems.explanation(cause)
            metadata["known.problem"] = "\(cause.problem.id)"
        }
        slot.state = .refused(reason, refusal)
        logger.error("advertisement not registered: \(reason)", metadata: metadata)
        if error.name == DBusError.Name.noReply { after(Self.releaseBackoff) { self.register(slot) } }
        onSettled?()
    }

    /// bluetoothd removed the advertisement (its `Timeout`, or the adapter going away).
    func released(_ slot: Slot) {
        logger.warning("advertisement released by bluetoothd", metadata: metadata(slot))
        guard slot.state == .advertising else { return }
        slot.state = .waitingForAdapter
        if let timeout = slot.definition.timeout, timeout > 0, let since = slot.registeredAt,
            clock.now() - since >= .seconds(Int(timeout)) - .milliseconds(500)
        {
            slot.state = .expired
            logger.info(
                "advertisement not registered again: its timeout expired (\(timeout) s)", metadata: metadata(slot))
            return
        }
        // Wait a moment: when the adapter is going away, InterfacesRemoved follows the Release.
        after(Self.releaseBackoff) { [unowned self] in
            if slot.state == .waitingForAdapter && slot.definition.enabled { self.register(slot) }
        }
    }

    /// Unregisters and registers `slot` again (the kernel lost it, or a central disconnected).
    func reregister(_ slot: Slot) {
        guard let adapterPath, slot.state == .advertising else { return }
        let attempt = generation
        slot.state = .registering
        connection.call(
            destination: BlueZNames.service, path: adapterPath, interface: BlueZNames.advertisingManager,
            member: "UnregisterAdvertisement", arguments: [.objectPath(slot.exported.path)]
        ) { [unowned self] _ in
            guard self.isCurrent(attempt) else { return }
            self.register(slot)
        }
    }

    /// Runs `action` after `delay` unless the adapter changes first.
    func after(_ delay: Duration, _ action: @escaping () -> Void) {
        let attempt = generation
        timerSequence += 1
        let key = timerSequence
        timers[key] = clock.at(clock.now() + delay) { [unowned self] in
            self.timers[key] = nil
            guard self.isCurrent(attempt) else { return }
            action()
        }
    }
}
