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
                lines.append(contentsOf: behaviourLines(characteristic).map { "      " + $0 })
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
    /// Where the characteristic's value comes from and who decides its reads and writes:
    /// `value: ...`, `reads: ...`, `writes: ...` (the last two only when it can be read or
    /// written).
    func behaviourLines(_ characteristic: CharacteristicDefinition) -> [String] {
        let flags = characteristic.flags
        var lines: [String] = []
        let initial = characteristic.valueType.flatMap { type in
            NumericType(rawValue: type).flatMap { $0.decode(characteristic.value) }.map { "\(type) \($0)" }
        }
        var value = "value: " + (initial.map { "initially \($0)" } ?? "initially \(characteristic.value.count) byte(s)")
        if let update = characteristic.update {
            value += "; " + updateText(update, notifiable: flags.allowsNotify || flags.allowsIndicate)
        }
        if flags.allowsWrite || flags.allowsWriteWithoutResponse { value += "; centrals' writes" }
        lines.append(value)
        let handlerText: String? = characteristic.handler.map { handler in
            "a program's handler when one is registered (answers within \(handler.timeoutMs) ms), else "
                + fallbackText(handler.fallback)
        }
        if flags.allowsRead {
            lines.append("reads: " + (handlerText ?? "the stored value"))
        }
        if flags.allowsWriteWithoutResponse {
            lines.append(
                "writes: acknowledged by bluetoothd before gattd sees them (write-without-response); stored"
                    + (characteristic.onWrite.map { ", then hook \($0.argv.first ?? "")" } ?? ""))
        } else if flags.allowsWrite {
            var steps: [String] = ["length \(characteristic.minLength)...\(characteristic.maxLength) (else 0x0d)"]
            if let rule = characteristic.accept { steps.append("accept \(rule.summary)") }
            if let handler = characteristic.handler {
                let without =
                    switch handler.fallback {
                    case .storedValue: "the steps after it"
                    case .error: fallbackText(handler.fallback)
                    }
                steps.append(
                    "a program's handler decides when one is registered (within \(handler.timeoutMs) ms), else \(without)")
            }
            if let hook = characteristic.onWrite {
                let program = hook.argv.first ?? ""
                steps.append(
                    hook.decides
                        ? "hook \(program) decides (exit 0 accepts, \(hook.timeoutMs) ms)"
                        : "stored, then hook \(program) runs")
            }
            if characteristic.onWrite?.decides != false { steps.append("stored") }
            lines.append("writes: " + steps.joined(separator: " -> "))
        }
        return lines
    }

    private func fallbackText(_ fallback: HandlerDefinition.Fallback) -> String {
        switch fallback {
        case .storedValue: "the stored value"
        case .error(let error): "ATT error 0x" + String(error.attCode, radix: 16)
        }
    }

    private func updateText(_ update: UpdateDefinition, notifiable: Bool) -> String {
        let source =
            switch update.source {
            case .counter: "a counter"
            case .random: "random numbers"
            case .file(let path, _, _, _): "file \(path)"
            case .command(let argv, _, _): "command \(argv.first ?? "")"
            }
        let encoding = update.valueType.map { " as \($0)" } ?? ""
        let when =
            update.whileUnsubscribed
            ? "always" : notifiable ? "only while a central is subscribed" : "never (no central can subscribe)"
        return "every \(update.everyMs) ms from \(source)\(encoding), \(when)"
    }

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
