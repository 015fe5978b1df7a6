// SPDX-License-Identifier: MIT

internal import BLEModel
internal import DBusKit
internal import Logging

/// The `Handle` property of every exported service, characteristic and descriptor
/// (docs/bluez-contract.md §10): the handle gattd requests (`HandleLayout`), else 0, which
/// lets bluetoothd choose; bluetoothd then writes its choice back with `Properties.Set`
/// while it reads the tree, before it answers `RegisterApplication`. Only the `org.bluez`
/// owner may write it.
final class HandleBook {
    enum Kind {
        case service, characteristic, descriptor
    }

    /// What is requested; emptied when bluetoothd could not honour it (`dropRequested`).
    private(set) var requested: AttributeHandles
    /// What bluetoothd wrote back for the attributes requested as 0.
    private(set) var written = AttributeHandles()
    /// The calls of whose sender are trusted (`GattRequestHandler.trustedSender`).
    weak var requests: GattRequestHandler?
    private let logger: Logger

    init(requested: AttributeHandles, logger: Logger) {
        self.requested = requested
        self.logger = logger
    }

    /// The `Handle` property's value.
    func handle(_ kind: Kind, _ id: String) -> UInt16 {
        requested[kind, id] ?? written[kind, id] ?? 0
    }

    func isWritable(by caller: String?) -> Bool {
        caller != nil && caller == requests?.trustedSender
    }

    /// bluetoothd's write-back.
    func write(_ kind: Kind, _ id: String, _ value: DBusValue) throws(DBusError) {
        guard let handle = value.asUInt16, handle != 0 else {
            throw .invalidArgs("Handle must be 1...65535")
        }
        if let wanted = requested[kind, id], wanted != handle {
            logger.warning(
                "bluetoothd placed an attribute elsewhere than requested",
                metadata: ["gatt.id": "\(id)", "requested": "\(Self.text(wanted))", "handle": "\(Self.text(handle))"])
        }
        written[kind, id] = handle
        logger.debug("bluetoothd chose a handle", metadata: ["gatt.id": "\(id)", "handle": "\(Self.text(handle))"])
    }

    /// Forgets the requested handles of the services `services` and the attributes
    /// `attributes` (one application's), so its next registration lets bluetoothd choose;
    /// false when none of them was requested.
    func dropRequested(services: Set<String>, attributes: Set<String>) -> Bool {
        let before = requested
        requested.services = requested.services.filter { !services.contains($0.key) }
        requested.characteristics = requested.characteristics.filter { !attributes.contains($0.key) }
        requested.descriptors = requested.descriptors.filter { !attributes.contains($0.key) }
        written.services = written.services.filter { !services.contains($0.key) }
        written.characteristics = written.characteristics.filter { !attributes.contains($0.key) }
        written.descriptors = written.descriptors.filter { !attributes.contains($0.key) }
        return requested != before
    }

    /// Every known handle: requested, else written back.
    var current: AttributeHandles {
        AttributeHandles(
            services: requested.services.merging(written.services) { wanted, _ in wanted },
            characteristics: requested.characteristics.merging(written.characteristics) { wanted, _ in wanted },
            descriptors: requested.descriptors.merging(written.descriptors) { wanted, _ in wanted })
    }

    static func text(_ handle: UInt16) -> String {
        let digits = String(handle, radix: 16)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}

extension AttributeHandles {
    fileprivate subscript(kind: HandleBook.Kind, id: String) -> UInt16? {
        get {
            switch kind {
            case .service: services[id]
            case .characteristic: characteristics[id]
            case .descriptor: descriptors[id]
            }
        }
        set {
            switch kind {
            case .service: services[id] = newValue
            case .characteristic: characteristics[id] = newValue
            case .descriptor: descriptors[id] = newValue
            }
        }
    }
}
