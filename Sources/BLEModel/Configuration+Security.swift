// SPDX-License-Identifier: MIT

extension Configuration {
    /// The most a pairing in `security.pairing` can give a link.
    static func reachable(with pairing: SecurityDefinition.Pairing) -> LinkSecurity {
        switch pairing {
        case .none: .open
        case .justWorks: .encrypted
        case .displayPasskey, .numericComparison: .secureConnections
        }
    }

    /// Every flag that asks for more than the chosen pairing mode can give is refused at
    /// its own path: bluetoothd would answer the central Insufficient Encryption or
    /// Authentication for ever, and the value could be used by nobody.
    func validateSecurity(into context: inout DecodingContext) {
        guard context.intact("security", "pairing") else { return }
        let pairing = security.pairing
        let reachable = Self.reachable(with: pairing)
        func check(_ names: [(String, LinkSecurity)], at path: String) {
            for (index, (name, needed)) in names.enumerated() where needed > reachable {
                context.error("\(path).flags[\(index)]", Self.unreachableMessage(name, needed, pairing))
            }
        }
        for service in services {
            for characteristic in service.characteristics where context.intact(characteristic.sourcePath, "flags") {
                check(characteristic.flags.map { ($0.rawValue, $0.linkSecurity) }, at: characteristic.sourcePath)
                for descriptor in characteristic.descriptors where context.intact(descriptor.sourcePath, "flags") {
                    check(descriptor.flags.map { ($0.rawValue, $0.linkSecurity) }, at: descriptor.sourcePath)
                }
            }
        }
    }

    static func unreachableMessage(
        _ flag: String, _ needed: LinkSecurity, _ pairing: SecurityDefinition.Pairing
    ) -> String {
        switch pairing {
        case .none:
            return "flag \"\(flag)\" needs a paired (encrypted) link, but gattd does not pair "
                + "(set \"security\": {\"pairing\": \"\(needed > .encrypted ? "display-passkey" : "just-works")\"})"
        case .justWorks:
            return "flag \"\(flag)\" needs an authenticated pairing, which \"just-works\" cannot give "
                + "(no passkey, no MITM protection): use \"security.pairing\": \"display-passkey\" or an \"encrypt-\" flag"
        case .displayPasskey, .numericComparison:
            return "flag \"\(flag)\" cannot be satisfied"
        }
    }
}
