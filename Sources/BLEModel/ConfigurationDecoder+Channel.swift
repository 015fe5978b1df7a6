// SPDX-License-Identifier: MIT

extension ConfigurationDecoder {
    static let channelKeys = ["id", "psm", "security", "service", "program"]
    static let channelProgramKeys = ["argv"]

    /// `{"id": "...", "psm": 0x80...0xFF | 0, "security": "none" | "encrypt" | "authenticate" |
    /// "secure", "service": "<service id>", "program": {"argv": [...]}}`.
    mutating func channel(_ value: JSONValue, _ path: String) -> ChannelDefinition? {
        guard let object = context.object(value, path, allowed: Self.channelKeys) else { return nil }
        var result = ChannelDefinition(id: "", service: "", sourcePath: path)
        if let value = object.required("id", &context), let id = context.string(value, object.path("id")) {
            result.id = id
        }
        if let value = object["psm"],
            let number = context.integerOrHexString(value, object.path("psm"), in: 0...0xFFFF)
        {
            if number == 0 {
                result.psm = nil
            } else if ChannelDefinition.dynamicPSMs.contains(UInt16(number)) {
                result.psm = UInt16(number)
            } else {
                context.error(
                    object.path("psm"),
                    "PSM \(number) (0x\(String(number, radix: 16))) is not an LE dynamic PSM: use 0x80...0xFF, "
                        + "or 0 (or leave \"psm\" out) for one the kernel picks")
            }
        }
        if let value = object["security"],
            let security = choice(value, object.path("security"), ChannelDefinition.Security.self)
        {
            result.security = security
        }
        if let value = object.required("service", &context),
            let service = context.string(value, object.path("service"))
        {
            result.service = service
        }
        if let value = object["program"],
            let program = context.object(value, object.path("program"), allowed: Self.channelProgramKeys),
            let argvValue = program.required("argv", &context),
            let argv = context.strings(argvValue, program.path("argv"))
        {
            if argv.first?.isEmpty ?? true {
                context.error(program.path("argv"), "argv must name a program")
            } else {
                result.program = argv
            }
        }
        return result
    }
}

extension Configuration {
    /// Channel ids unique and well-formed, PSMs not asked for twice, the service there and
    /// carrying at most one PSM characteristic, and the channel's security within what the
    /// pairing mode can give.
    func validateChannels(into context: inout DecodingContext) {
        var firstID: [String: String] = [:]
        var firstPSM: [UInt16: String] = [:]
        var firstService: [String: String] = [:]
        for channel in channels {
            let path = channel.sourcePath
            if context.intact(path, "id") {
                if !Self.isValidIdentifier(channel.id) {
                    context.error(path + ".id", "id \"\(channel.id)\" may only contain A-Z, a-z, 0-9, '_' and '-'")
                } else if let first = firstID[channel.id] {
                    context.error(path + ".id", "duplicate channel id \"\(channel.id)\" (first used at \(first))")
                } else {
                    firstID[channel.id] = path + ".id"
                }
            }
            if context.intact(path, "psm"), let psm = channel.psm {
                if let first = firstPSM[psm] {
                    context.error(
                        path + ".psm", "PSM 0x\(String(psm, radix: 16)) is already asked for at \(first)")
                } else {
                    firstPSM[psm] = path + ".psm"
                }
            }
            if context.intact(path, "service") {
                if let service = services.first(where: { $0.id == channel.service }) {
                    if let first = firstService[channel.service] {
                        context.error(
                            path + ".service",
                            "service \"\(channel.service)\" already carries the PSM characteristic of the channel at "
                                + "\(first) (a service holds one: give this channel another service)")
                    } else {
                        firstService[channel.service] = path
                    }
                    if let clash = service.characteristics.first(where: {
                        $0.uuid == ChannelDefinition.psmCharacteristicUUID
                    }) {
                        context.error(
                            path + ".service",
                            "service \"\(channel.service)\" defines the PSM characteristic itself (\(clash.sourcePath)); "
                                + "gattd adds it for the channel: remove it from the service")
                    }
                } else {
                    context.error(
                        path + ".service",
                        "no service has id \"\(channel.service)\""
                            + EditDistance.hint(for: channel.service, among: services.map(\.id)))
                }
            }
            if context.intact(path, "security"), context.intact("security", "pairing") {
                let pairing = security.pairing
                let needed = channel.security.linkSecurity
                if needed > Self.reachable(with: pairing) {
                    context.error(
                        path + ".security", Self.unreachableChannelMessage(channel.security, pairing))
                }
            }
        }
    }

    static func unreachableChannelMessage(
        _ level: ChannelDefinition.Security, _ pairing: SecurityDefinition.Pairing
    ) -> String {
        switch pairing {
        case .none:
            "channel security \"\(level.rawValue)\" needs a paired (encrypted) link, but gattd does not pair "
                + "(set \"security\": {\"pairing\": \"\(level == .encrypt ? "just-works" : "display-passkey")\"})"
        case .justWorks:
            "channel security \"\(level.rawValue)\" needs an authenticated pairing, which \"just-works\" cannot give: "
                + "use \"security.pairing\": \"display-passkey\" or channel security \"encrypt\""
        case .displayPasskey, .numericComparison:
            "channel security \"\(level.rawValue)\" cannot be satisfied"
        }
    }
}
