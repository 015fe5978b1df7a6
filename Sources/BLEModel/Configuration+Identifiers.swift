// SPDX-License-Identifier: MIT

extension Configuration {
    /// Fills in the ids that were absent from the file, in a stable way.
    ///
    /// Services get `svc-<short uuid>`, characteristics `<service id>.<short uuid>`,
    /// descriptors `<characteristic id>.<short uuid>`, advertisements `adv`. When that id is
    /// already taken (by an explicit id or an earlier derived one) the suffixes `-2`, `-3`, ...
    /// are tried in order. Services are named first, then characteristics and descriptors in
    /// file order. Services, characteristics and descriptors share one namespace;
    /// advertisements have their own.
    /// - Parameter absent: `sourcePath`s of the elements whose `id` key was absent.
    mutating func assignDerivedIdentifiers(absent: Set<String>) {
        var taken = Set<String>()
        for service in services {
            if !absent.contains(service.sourcePath) { taken.insert(service.id) }
            for characteristic in service.characteristics {
                if !absent.contains(characteristic.sourcePath) { taken.insert(characteristic.id) }
                for descriptor in characteristic.descriptors where !absent.contains(descriptor.sourcePath) {
                    taken.insert(descriptor.id)
                }
            }
        }
        for index in services.indices where absent.contains(services[index].sourcePath) {
            services[index].id = Self.unique("svc-" + services[index].uuid.shortForm, &taken)
        }
        for s in services.indices {
            for c in services[s].characteristics.indices {
                if absent.contains(services[s].characteristics[c].sourcePath) {
                    let base = services[s].id + "." + services[s].characteristics[c].uuid.shortForm
                    services[s].characteristics[c].id = Self.unique(base, &taken)
                }
                let characteristicID = services[s].characteristics[c].id
                for d in services[s].characteristics[c].descriptors.indices
                where absent.contains(services[s].characteristics[c].descriptors[d].sourcePath) {
                    let base = characteristicID + "." + services[s].characteristics[c].descriptors[d].uuid.shortForm
                    services[s].characteristics[c].descriptors[d].id = Self.unique(base, &taken)
                }
            }
        }
        var takenAdvertisements = Set(advertisements.filter { !absent.contains($0.sourcePath) }.map(\.id))
        for index in advertisements.indices where absent.contains(advertisements[index].sourcePath) {
            advertisements[index].id = Self.unique("adv", &takenAdvertisements)
        }
    }

    private static func unique(_ base: String, _ taken: inout Set<String>) -> String {
        var candidate = base
        var suffix = 2
        while taken.contains(candidate) {
            candidate = "\(base)-\(suffix)"
            suffix += 1
        }
        taken.insert(candidate)
        return candidate
    }
}
