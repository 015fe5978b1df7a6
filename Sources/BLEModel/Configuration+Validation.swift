// SPDX-License-Identifier: MIT

extension Configuration {
    /// UUIDs bluetoothd serves itself and refuses from applications.
    static let reservedServices: [UInt16: String] = [0x1800: "Generic Access", 0x1801: "Generic Attribute"]

    /// The cross-field rules of config/README.md ("Validation rules"): ids, includes,
    /// lengths, reserved UUIDs, flag combinations and advertisement consistency.
    ///
    /// Runs after `assignDerivedIdentifiers`. Every rule runs whose inputs decoded
    /// (`DecodingContext.intact`): a broken field silences only the rules that read it, so
    /// rule errors come together with the structural ones in one report. Id and include
    /// rules always run. Issues are appended to `context`, positioned from its recorded paths.
    func validate(into context: inout DecodingContext, absentIDs: Set<String>) {
        context.beginRules()
        validateIdentifiers(into: &context, absentIDs: absentIDs)
        validateIncludes(into: &context)
        for service in services {
            if context.intact(service.sourcePath, "uuid"), let short = service.uuid.uuid16,
                let name = Self.reservedServices[short]
            {
                context.error(
                    service.sourcePath + ".uuid",
                    "UUID 0x\(hex4(short)) (\(name)) is served by bluetoothd itself; remove this service")
            }
            for characteristic in service.characteristics {
                validate(characteristic, into: &context)
                for descriptor in characteristic.descriptors {
                    validate(descriptor, into: &context)
                }
            }
        }
        for advertisement in advertisements {
            validate(advertisement, into: &context)
        }

        validateSecurity(into: &context)
        validateChannels(into: &context)
        validateHandles(into: &context)
    }

    /// What `gattd --check` (and the start) warns about beyond the file's own rules: a
    /// definition no phone will find, because nothing advertises it. Kept out of the load's
    /// warnings, which every reload logs and every test of a single rule would repeat.
    public var discoveryWarnings: [ConfigurationIssue] {
        guard !services.isEmpty, !advertisements.contains(where: \.enabled) else { return [] }
        if advertisements.isEmpty {
            return [
                ConfigurationIssue(
                    path: "",
                    message: "no advertisement: phones will not find it (a central that knows the address can "
                        + "still connect); add one under \"advertisements\" (config/README.md)",
                    severity: .warning)
            ]
        }
        return [
            ConfigurationIssue(
                path: "advertisements",
                message: "no advertisement is enabled: phones will not find it until one is started "
                    + "(gattctl advertise ID on)",
                severity: .warning)
        ]
    }

    /// Pinned `handle`s: in range, not overlapping, each where bluetoothd's layout puts it
    /// (`HandleLayout`).
    private func validateHandles(into context: inout DecodingContext) {
        let pinned = services.contains { service in
            service.handle != nil
                || service.characteristics.contains { $0.handle != nil || $0.descriptors.contains { $0.handle != nil } }
        }
        guard pinned else { return }
        for problem in HandleLayout.plan(self).problems {
            context.error(problem.path, problem.message)
        }
    }

    // MARK: - Ids

    static func isValidIdentifier(_ id: String) -> Bool {
        !id.isEmpty
            && id.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            }
    }

    private func validateIdentifiers(into context: inout DecodingContext, absentIDs: Set<String>) {
        var attributePaths: [(id: String, path: String)] = []
        for service in services {
            attributePaths.append((service.id, service.sourcePath))
            for characteristic in service.characteristics {
                attributePaths.append((characteristic.id, characteristic.sourcePath))
                for descriptor in characteristic.descriptors {
                    attributePaths.append((descriptor.id, descriptor.sourcePath))
                }
            }
        }
        let advertisementPaths = advertisements.map { (id: $0.id, path: $0.sourcePath) }
        for namespace in [attributePaths, advertisementPaths] {
            var firstUse: [String: String] = [:]
            for (id, path) in namespace where !absentIDs.contains(path) {
                let idPath = path + ".id"
                if id.isEmpty {
                    context.error(idPath, "id must not be empty")
                } else if !Self.isValidIdentifier(id) {
                    context.error(idPath, "id \"\(id)\" may only contain A-Z, a-z, 0-9, '_' and '-'")
                } else if let first = firstUse[id] {
                    context.error(idPath, "duplicate id \"\(id)\" (first used at \(first))")
                } else {
                    firstUse[id] = idPath
                }
            }
        }
    }

    // MARK: - Includes

    private func validateIncludes(into context: inout DecodingContext) {
        let indexByID = Dictionary(services.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        for service in services {
            for (index, included) in service.includes.enumerated() {
                let path = "\(service.sourcePath).includes[\(index)]"
                if included == service.id {
                    context.error(path, "a service cannot include itself")
                } else if indexByID[included] == nil {
                    context.error(
                        path,
                        "no service has id \"\(included)\"" + EditDistance.hint(for: included, among: services.map(\.id)))
                }
            }
        }
        // Depth-first search; a back edge closes a cycle, reported once where it closes.
        var state = [Int](repeating: 0, count: services.count)  // 0 new, 1 on stack, 2 done
        var stack: [Int] = []
        func visit(_ node: Int) {
            state[node] = 1
            stack.append(node)
            for (index, included) in services[node].includes.enumerated() {
                guard let next = indexByID[included], next != node else { continue }
                if state[next] == 1, let start = stack.firstIndex(of: next) {
                    let names = (stack[start...].map { services[$0].id } + [included]).joined(separator: " -> ")
                    context.error("\(services[node].sourcePath).includes[\(index)]", "include cycle: \(names)")
                } else if state[next] == 0 {
                    visit(next)
                }
            }
            stack.removeLast()
            state[node] = 2
        }
        for node in services.indices where state[node] == 0 { visit(node) }
    }

    // MARK: - Attributes

    private func validateLengths(
        _ value: [UInt8], minLength: Int, maxLength: Int, path: String, into context: inout DecodingContext
    ) {
        if minLength > maxLength {
            context.error(path + ".minLength", "minLength \(minLength) is greater than maxLength \(maxLength)")
        } else if value.count > maxLength {
            context.error(
                path + ".value", "initial value is \(value.count) bytes, longer than maxLength \(maxLength)",
                at: context.position(of: path + ".value") ?? context.position(of: path))
        } else if value.count < minLength {
            context.error(
                path + ".value", "initial value is \(value.count) bytes, shorter than minLength \(minLength)",
                at: context.position(of: path + ".value") ?? context.position(of: path + ".minLength"))
        }
    }

    private func validate(_ characteristic: CharacteristicDefinition, into context: inout DecodingContext) {
        let path = characteristic.sourcePath
        let flags = characteristic.flags
        if context.intact(path, "value", "minLength", "maxLength") {
            validateLengths(
                characteristic.value, minLength: characteristic.minLength, maxLength: characteristic.maxLength,
                path: path, into: &context)
        }
        guard context.intact(path, "flags") else { return }
        if flags.allowsWrite && flags.allowsWriteWithoutResponse {
            context.warning(
                path + ".flags",
                "\"write\" together with \"write-without-response\": bluetoothd acknowledges writes to such a "
                    + "characteristic without asking gattd, so gattd cannot refuse them")
        }
        if characteristic.update != nil && context.intact(path, "update") && !flags.allowsRead && !flags.allowsNotify && !flags.allowsIndicate {
            context.error(
                path + ".update", "update needs a readable or notifiable characteristic (flags \"read\", \"notify\" or \"indicate\")")
        }
        if characteristic.delivery == .all && context.intact(path, "delivery") && !flags.allowsNotify && !flags.allowsIndicate {
            context.error(
                path + ".delivery", "delivery \"all\" needs a notifiable characteristic (flags \"notify\" or \"indicate\")")
        }
        if characteristic.acquireNotify && context.intact(path, "acquireNotify") && !flags.allowsNotify {
            context.error(
                path + ".acquireNotify",
                "acquireNotify needs the flag \"notify\": bluetoothd subscribes through the socket for "
                    + "notifications, and before 5.80 it passes no indication confirmation back through it")
        }
        if characteristic.acquireWrite && context.intact(path, "acquireWrite") {
            if !flags.allowsWriteWithoutResponse {
                context.error(
                    path + ".acquireWrite",
                    "acquireWrite needs the flag \"write-without-response\": writes on the socket are acknowledged "
                        + "before gattd sees them")
            } else if let kept = flags.first(where: \.allowsWrite) {
                context.error(
                    path + ".acquireWrite",
                    "acquireWrite with \"\(kept.rawValue)\": bluetoothd would put every write, Write Requests "
                        + "included, on the socket and acknowledge it there, so no ATT error could reach the "
                        + "central; use \"write-without-response\" alone")
            }
        }
        if let update = characteristic.update, context.intact(path, "update", "minLength", "maxLength") {
            warnAbout(update, of: characteristic, into: &context)
        }
        if let rule = characteristic.accept, context.intact(path, "accept") {
            validate(rule, of: characteristic, into: &context)
        }
        if let hook = characteristic.onWrite, context.intact(path, "onWrite") {
            if !flags.allowsWrite && !flags.allowsWriteWithoutResponse {
                context.error(path + ".onWrite", "onWrite needs a writable characteristic (flag \"write\")")
            } else if hook.decides && flags.allowsWriteWithoutResponse {
                context.error(
                    path + ".onWrite.decides",
                    "cannot decide writes to a characteristic with \"write-without-response\": bluetoothd "
                        + "acknowledges them itself")
            } else if hook.decides, characteristic.handler != nil, context.intact(path, "handler") {
                context.warning(
                    path + ".onWrite.decides",
                    "while a program's handler takes this characteristic's writes it decides them and this hook "
                        + "is not asked; the hook decides only when no handler is registered (with \"fallback\": "
                        + "\"value\") or the handler took only the reads")
            }
        }
    }

    /// What a timed update will do that its author may not expect: values of a length the
    /// characteristic refuses (every tick dropped, logged), reads that show the initial value
    /// while nobody is subscribed.
    private func warnAbout(
        _ update: UpdateDefinition, of characteristic: CharacteristicDefinition, into context: inout DecodingContext
    ) {
        let path = characteristic.sourcePath
        let flags = characteristic.flags
        if let width = update.encode?.fixedWidth,
            !(characteristic.minLength...max(characteristic.minLength, characteristic.maxLength)).contains(width)
        {
            let defaulted = update.encode == .uint8Slot ? ", the default encode" : ""
            let type = update.valueType.map { " (\($0)\(defaulted))" } ?? ""
            context.warning(
                path + ".update",
                "each update is \(width) byte(s)\(type), outside minLength...maxLength "
                    + "\(characteristic.minLength)...\(characteristic.maxLength): every value will be refused "
                    + "(logged) and the characteristic keeps its initial value; set \"encode\" "
                    + "(e.g. {\"uint16\": \"$\"}) or the length bounds")
        }
        guard !update.whileUnsubscribed, flags.allowsRead else { return }
        if flags.allowsNotify || flags.allowsIndicate {
            context.warning(
                path + ".update",
                "updates run only while a central is subscribed (\"whileUnsubscribed\": false): a central that "
                    + "only reads sees the last value (at first the initial one); set \"whileUnsubscribed\": true "
                    + "to keep reads current")
        } else {
            context.warning(
                path + ".update",
                "updates never run: they wait for a subscriber, and without \"notify\" or \"indicate\" no "
                    + "central can subscribe; set \"whileUnsubscribed\": true")
        }
    }

    /// `accept`: only where gattd can refuse a write, satisfiable within the length
    /// bounds, and met by the initial value.
    private func validate(
        _ rule: AcceptRule, of characteristic: CharacteristicDefinition, into context: inout DecodingContext
    ) {
        let path = characteristic.sourcePath
        let flags = characteristic.flags
        if flags.allowsWriteWithoutResponse {
            context.error(
                path + ".accept",
                "cannot refuse writes to a characteristic with \"write-without-response\": bluetoothd "
                    + "acknowledges them itself; use \"write\" alone")
        } else if !flags.allowsWrite {
            context.error(path + ".accept", "accept needs a writable characteristic (flag \"write\")")
        }
        let width = rule.type.byteCount
        if context.intact(path, "minLength", "maxLength"),
            !(characteristic.minLength...max(characteristic.minLength, characteristic.maxLength)).contains(width)
        {
            context.error(
                path + ".accept",
                "no write could pass: a \(rule.type.rawValue) is \(width) byte(s), outside minLength...maxLength "
                    + "\(characteristic.minLength)...\(characteristic.maxLength)")
        }
        if context.intact(path, "value"), characteristic.value.count == width, rule.refusal(of: characteristic.value) != nil {
            let shown = rule.type.decode(characteristic.value) ?? "?"
            context.error(
                path + ".value", "initial value \(shown) is not accepted by its own rule (\(rule.summary))",
                at: context.position(of: path + ".value"))
        }
    }

    private func validate(_ descriptor: DescriptorDefinition, into context: inout DecodingContext) {
        let path = descriptor.sourcePath
        switch context.intact(path, "uuid") ? descriptor.uuid.uuid16 : nil {
        case 0x2902:
            context.error(
                path + ".uuid",
                "bluetoothd creates the CCC descriptor (0x2902) itself from the notify/indicate flags; remove it")
        case 0x2900:
            context.error(
                path + ".uuid",
                "bluetoothd creates the CEP descriptor (0x2900) itself from the reliable-write/writable-auxiliaries "
                    + "flags; remove it")
        default:
            break
        }
        if context.intact(path, "value", "minLength", "maxLength") {
            validateLengths(
                descriptor.value, minLength: descriptor.minLength, maxLength: descriptor.maxLength, path: path,
                into: &context)
        }
    }

    // MARK: - Advertisements

    private func validate(_ advertisement: AdvertisementDefinition, into context: inout DecodingContext) {
        let path = advertisement.sourcePath
        if advertisement.type == .broadcast && advertisement.discoverable
            && context.intact(path, "type", "discoverable")
        {
            context.error(path + ".discoverable", "a broadcast advertisement cannot be discoverable")
        }
        if advertisement.localName != nil && advertisement.includes.contains(.localName)
            && context.intact(path, "localName", "includes")
        {
            context.error(
                path + ".localName", "\"localName\" and includes \"local-name\" are mutually exclusive; use one")
        }
        if advertisement.appearance != nil && advertisement.includes.contains(.appearance)
            && context.intact(path, "appearance", "includes")
        {
            context.error(
                path + ".appearance", "\"appearance\" and includes \"appearance\" are mutually exclusive; use one")
        }
        if let discoverableTimeout = advertisement.discoverableTimeout, let timeout = advertisement.timeout,
            discoverableTimeout > timeout, context.intact(path, "discoverableTimeout", "timeout")
        {
            context.error(
                path + ".discoverableTimeout",
                "discoverableTimeout \(discoverableTimeout) is longer than timeout \(timeout)")
        }
        if let minimum = advertisement.minInterval, let maximum = advertisement.maxInterval, minimum > maximum,
            context.intact(path, "minInterval", "maxInterval")
        {
            context.error(path + ".minInterval", "minInterval \(minimum) is greater than maxInterval \(maximum)")
        }
        // The byte budget needs every field that goes on air.
        if context.intact(
            path, "type", "localName", "serviceUUIDs", "solicitUUIDs", "manufacturerData", "serviceData", "data",
            "appearance", "includes", "discoverable", "txPower")
        {
            validatePayload(of: advertisement, into: &context)
        }
    }
}
