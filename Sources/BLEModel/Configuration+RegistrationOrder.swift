// SPDX-License-Identifier: MIT

extension Configuration {
    /// Services in the order to export them: every included service before the services
    /// that include it, otherwise file order.
    ///
    /// bluetoothd resolves `Includes` against services it has already created while it
    /// walks GetManagedObjects, so an includer listed first would lose its include. This is
    /// a stable topological sort (at each step, the earliest service in the file whose
    /// includes are all placed). Services caught in an include cycle (impossible after
    /// validation) and includes of unknown ids are placed in file order at the end.
    public var servicesInRegistrationOrder: [ServiceDefinition] {
        let ids = Set(services.map(\.id))
        var placed = Set<String>()
        var remaining = Array(services.indices)
        var order: [ServiceDefinition] = []
        while !remaining.isEmpty {
            guard
                let next = remaining.firstIndex(where: { index in
                    services[index].includes.allSatisfy { placed.contains($0) || !ids.contains($0) }
                })
            else { break }
            let service = services[remaining.remove(at: next)]
            placed.insert(service.id)
            order.append(service)
        }
        return order + remaining.map { services[$0] }
    }
}
