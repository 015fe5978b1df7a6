// SPDX-License-Identifier: MIT

import BLEModel

/// What `gattd --check` prints for a valid configuration.
struct CheckReport {
    let path: String
    let configuration: Configuration

    var text: String {
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
                lines.append(
                    "    characteristic \(characteristic.id) \(characteristic.uuid.shortForm) [\(flags)] "
                        + "\(characteristic.value.count) byte(s), writes \(characteristic.minLength)...\(characteristic.maxLength)")
                for descriptor in characteristic.descriptors {
                    lines.append("      descriptor \(descriptor.id) \(descriptor.uuid.shortForm)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}

func plural(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
