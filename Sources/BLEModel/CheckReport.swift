// SPDX-License-Identifier: MIT

/// What `gattd --check` prints for a valid configuration.
public struct CheckReport {
    public let path: String
    public let configuration: Configuration

    public init(path: String, configuration: Configuration) {
        self.path = path
        self.configuration = configuration
    }

    public var text: String {
        let characteristics = configuration.services.flatMap(\.characteristics)
        let descriptors = characteristics.flatMap(\.descriptors)
        var lines = [
            "\(path): OK",
            "  \(plural(configuration.services.count, "service")), "
                + "\(plural(characteristics.count, "characteristic")), \(plural(descriptors.count, "descriptor")), "
                + "\(plural(configuration.advertisements.count, "advertisement"))",
        ]
        for service in configuration.servicesInRegistrationOrder {
            let kind = service.primary ? "primary" : "secondary"
            lines.append("  service \(service.id) \(service.uuid.shortForm) (\(kind))")
            for characteristic in service.characteristics {
                let flags = characteristic.flags.map(\.rawValue).joined(separator: ",")
                var sockets: [String] = []
                if characteristic.acquireNotify { sockets.append("notify") }
                if characteristic.acquireWrite { sockets.append("write") }
                lines.append(
                    "    characteristic \(characteristic.id) \(characteristic.uuid.shortForm) [\(flags)] "
                        + "\(characteristic.value.count) byte(s), writes \(characteristic.minLength)...\(characteristic.maxLength)"
                        + (sockets.isEmpty ? "" : ", socket \(sockets.joined(separator: ","))"))
                for descriptor in characteristic.descriptors {
                    lines.append("      descriptor \(descriptor.id) \(descriptor.uuid.shortForm)")
                }
            }
        }
        for advertisement in configuration.advertisements {
            lines.append(contentsOf: advertisementLines(advertisement))
        }
        for channel in configuration.channels {
            lines.append("  \(channel.summary)")
        }
        lines.append("  security: \(configuration.security.summary)")
        return lines.joined(separator: "\n")
    }
}

extension CheckReport {
    /// `adv main (peripheral): advertising data 13/31 bytes: ...; scan response ...`, then
    /// one `note:` line per adapter- or version-dependent remark.
    func advertisementLines(_ advertisement: AdvertisementDefinition) -> [String] {
        let payload = AdvertisingPayload(advertisement)
        let state = advertisement.enabled ? "" : ", disabled"
        var lines = ["  adv \(advertisement.id) (\(advertisement.type.rawValue)\(state)): \(payload.summary)"]
        for note in payload.notes { lines.append("    note: \(note)") }
        return lines
    }
}

public func plural(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
