// SPDX-License-Identifier: MIT

/// ATT handles of gattd's attributes, by id: a service's declaration, a characteristic's
/// value (its declaration is the handle before), a descriptor's own handle. These are
/// the numbers of BlueZ's `Handle` property.
public struct AttributeHandles: Sendable, Equatable {
    public var services: [String: UInt16]
    public var characteristics: [String: UInt16]
    public var descriptors: [String: UInt16]

    public init(
        services: [String: UInt16] = [:], characteristics: [String: UInt16] = [:], descriptors: [String: UInt16] = [:]
    ) {
        self.services = services
        self.characteristics = characteristics
        self.descriptors = descriptors
    }

    public var isEmpty: Bool { services.isEmpty && characteristics.isEmpty && descriptors.isEmpty }
}

/// Where gattd asks bluetoothd to put each attribute (docs/bluez-contract.md §10).
///
/// bluetoothd gives a service exactly as many handles as it has attributes, one after
/// the other with no gap: the service declaration, one per included service, then per
/// characteristic its declaration, its value, the CCC (with `notify`/`indicate` in any
/// form), the CEP (with `reliable-write` or `writable-auxiliaries`), then its
/// descriptors, in the order the objects are exported. So the handles of a service
/// follow from its first one and the order of its characteristics and descriptors; the
/// layout fixes that order: first those with a wanted handle (pinned in the definition,
/// else remembered), by that handle, then the new ones in definition order. A wanted
/// handle that does not land where the order puts it is a `problem` when pinned, a
/// `moved` note when remembered (it gets the handle the layout gives it).
///
/// Services with a wanted handle keep it unless their range (which grows with new
/// attributes) overlaps another's or runs past 0xFFFF; a pinned one that does is a
/// problem, a remembered one is placed anew. New services go after the highest handle in
/// use. When no service has a wanted handle (the first registration), nothing is
/// requested and bluetoothd chooses; it writes its choice back.
public struct HandleLayout: Sendable, Equatable {
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// JSON path of the `handle` at fault.
        public var path: String
        public var message: String

        public var description: String { "\(path): \(message)" }
    }

    /// The handles to request; an attribute absent here gets 0 (bluetoothd chooses).
    public var handles = AttributeHandles()
    /// Characteristic ids of each service (by service id), in export order.
    public var characteristicOrder: [String: [String]] = [:]
    /// Descriptor ids of each characteristic (by characteristic id), in export order.
    public var descriptorOrder: [String: [String]] = [:]
    /// Remembered handles that could not be kept, one line each, for the log.
    public var moved: [String] = []
    /// Pinned handles that cannot be honoured (refused by `gattd --check`).
    public var problems: [Problem] = []

    public init() {}

    /// How many handles bluetoothd gives `service`.
    public static func size(of service: ServiceDefinition) -> Int {
        1 + service.includes.count + service.characteristics.reduce(0) { $0 + size(of: $1) }
    }

    /// How many handles a characteristic takes, its descriptors included.
    public static func size(of characteristic: CharacteristicDefinition) -> Int {
        let flags = characteristic.flags
        let ccc = flags.allowsNotify || flags.allowsIndicate ? 1 : 0
        let cep = flags.contains(.reliableWrite) || flags.contains(.writableAuxiliaries) ? 1 : 0
        return 2 + ccc + cep + characteristic.descriptors.count
    }

    /// The layout of `configuration`'s services, keeping `remembered` handles where it can.
    public static func plan(_ configuration: Configuration, remembered: AttributeHandles = AttributeHandles()) -> HandleLayout {
        var layout = HandleLayout()
        let services = configuration.servicesInRegistrationOrder
        for service in services {
            layout.order(service, remembered: remembered)
        }
        let starts = layout.placeServices(services, remembered: remembered)
        for service in services {
            if let start = starts[service.id] {
                layout.assign(service, from: start, remembered: remembered)
            } else {
                for characteristic in service.characteristics {
                    if characteristic.handle != nil {
                        layout.problem(characteristic.sourcePath, "a characteristic's handle needs its service's handle")
                    }
                    for descriptor in characteristic.descriptors where descriptor.handle != nil {
                        layout.problem(descriptor.sourcePath, "a descriptor's handle needs its service's handle")
                    }
                }
            }
        }
        return layout
    }

    private mutating func order(_ service: ServiceDefinition, remembered: AttributeHandles) {
        characteristicOrder[service.id] = Self.ordered(service.characteristics) {
            $0.handle ?? remembered.characteristics[$0.id]
        }.map(\.id)
        for characteristic in service.characteristics {
            descriptorOrder[characteristic.id] = Self.ordered(characteristic.descriptors) {
                $0.handle ?? remembered.descriptors[$0.id]
            }.map(\.id)
        }
    }

    /// Those with a wanted handle by that handle, then the others as they come.
    private static func ordered<Element>(_ elements: [Element], wanted: (Element) -> UInt16?) -> [Element] {
        let keyed = elements.enumerated().compactMap { index, element in wanted(element).map { ($0, index, element) } }
            .sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        return keyed + elements.filter { wanted($0) == nil }
    }

    /// The first handle of each service that gets one.
    private mutating func placeServices(
        _ services: [ServiceDefinition], remembered: AttributeHandles
    ) -> [String: UInt16] {
        var ranges: [(id: String, range: ClosedRange<Int>)] = []
        var starts: [String: UInt16] = [:]
        func overlap(_ range: ClosedRange<Int>) -> (id: String, range: ClosedRange<Int>)? {
            ranges.first { $0.range.overlaps(range) }
        }
        func text(_ range: ClosedRange<Int>) -> String { "\(Self.hex(range.lowerBound))-\(Self.hex(range.upperBound))" }
        for service in services {
            guard let pinned = service.handle else { continue }
            let range = Int(pinned)...(Int(pinned) + Self.size(of: service) - 1)
            if range.upperBound > 0xFFFF {
                problem(service.sourcePath, "the service needs handles \(text(range)), past 0xFFFF")
            } else if let other = overlap(range) {
                problem(
                    service.sourcePath,
                    "the service's handles \(text(range)) overlap service \"\(other.id)\" at \(text(other.range))")
            } else {
                ranges.append((service.id, range))
                starts[service.id] = pinned
            }
        }
        var unplaced: [ServiceDefinition] = []
        // Remembered ones by their first handle: one that now reaches into the next one's
        // range is the one that grew, and moves; the next keeps its place.
        let candidates = services.filter { $0.handle == nil }.compactMap { service in
            remembered.services[service.id].map { (service, Int($0)...(Int($0) + Self.size(of: service) - 1)) }
        }.sorted { $0.1.lowerBound < $1.1.lowerBound }
        for (index, (service, range)) in candidates.enumerated() {
            let grownInto = candidates.dropFirst(index + 1).first { range.contains($0.1.lowerBound) }
            if range.upperBound > 0xFFFF {
                moved.append("service \(service.id): its handles \(text(range)) run past 0xFFFF; placed anew")
                unplaced.append(service)
            } else if let other = overlap(range) ?? grownInto.map({ ($0.0.id, $0.1) }) {
                moved.append(
                    "service \(service.id): its handles \(text(range)) overlap service \(other.id) at "
                        + "\(text(other.range)); placed anew")
                unplaced.append(service)
            } else {
                ranges.append((service.id, range))
                starts[service.id] = UInt16(range.lowerBound)
            }
        }
        unplaced += services.filter { $0.handle == nil && remembered.services[$0.id] == nil }
        // A first registration: bluetoothd chooses (and writes its choice back).
        guard var next = ranges.map(\.range.upperBound).max().map({ $0 + 1 }) else { return starts }
        for service in unplaced {
            let size = Self.size(of: service)
            guard next + size - 1 <= 0xFFFF else {
                moved.append("service \(service.id): no free handles after 0x\(hex4(UInt16(next - 1))); bluetoothd chooses")
                continue
            }
            starts[service.id] = UInt16(next)
            next += size
        }
        return starts
    }

    private mutating func assign(_ service: ServiceDefinition, from start: UInt16, remembered: AttributeHandles) {
        handles.services[service.id] = start
        var next = Int(start) + 1 + service.includes.count
        let characteristics = Dictionary(service.characteristics.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for id in characteristicOrder[service.id] ?? [] {
            guard let characteristic = characteristics[id] else { continue }
            let value = UInt16(next + 1)
            check(
                value, pinned: characteristic.handle, remembered: remembered.characteristics[id],
                path: characteristic.sourcePath, what: "characteristic \(id)",
                hint: "its declaration is at 0x\(hex4(UInt16(next))), its value at 0x\(hex4(value))")
            handles.characteristics[id] = value
            next += Self.size(of: characteristic) - characteristic.descriptors.count
            let descriptors = Dictionary(characteristic.descriptors.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            for descriptorID in descriptorOrder[id] ?? [] {
                guard let descriptor = descriptors[descriptorID] else { continue }
                check(
                    UInt16(next), pinned: descriptor.handle, remembered: remembered.descriptors[descriptorID],
                    path: descriptor.sourcePath, what: "descriptor \(descriptorID)", hint: "it is at 0x\(hex4(UInt16(next)))")
                handles.descriptors[descriptorID] = UInt16(next)
                next += 1
            }
        }
    }

    private mutating func check(
        _ actual: UInt16, pinned: UInt16?, remembered: UInt16?, path: String, what: String, hint: String
    ) {
        if let pinned, pinned != actual {
            problem(
                path,
                "handle 0x\(hex4(pinned)) is not where bluetoothd puts this attribute: with its service's handle "
                    + "and the attributes before it, \(hint)")
        } else if pinned == nil, let remembered, remembered != actual {
            moved.append(
                "\(what): 0x\(hex4(remembered)) -> 0x\(hex4(actual)) (attributes before it in its service changed)")
        }
    }

    /// `0x0040`; five digits past 0xFFFF.
    static func hex(_ value: Int) -> String {
        value > 0xFFFF ? "0x" + String(value, radix: 16, uppercase: true) : "0x" + hex4(UInt16(value))
    }

    private mutating func problem(_ element: String, _ message: String) {
        problems.append(Problem(path: element + ".handle", message: message))
    }
}
