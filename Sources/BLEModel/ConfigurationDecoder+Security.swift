// SPDX-License-Identifier: MIT

extension ConfigurationDecoder {
    static let securityKeys = [
        "pairing", "pairable", "pairableSeconds", "bondedOnly", "onPasskey", "onConfirm", "confirmSeconds",
    ]
    static let passkeyProgramKeys = ["argv", "timeoutMs"]
    static let pairableWords = ["always", "never", "window"]

    /// `{"pairing": "none" | "just-works" | "display-passkey" | "numeric-comparison", "pairable":
    /// "always" | "never" | "window", "pairableSeconds": 1...86400, "bondedOnly": bool,
    /// "onPasskey": {"argv": [...], "timeoutMs": n}, "onConfirm": {"argv": [...]},
    /// "confirmSeconds": 1...25}`.
    mutating func security(_ value: JSONValue, _ path: String) -> SecurityDefinition? {
        guard let object = context.object(value, path, allowed: Self.securityKeys) else { return nil }
        var result = SecurityDefinition()
        var pairingKnown = true
        if let value = object["pairing"] {
            if let pairing = choice(value, object.path("pairing"), SecurityDefinition.Pairing.self) {
                result.pairing = pairing
            } else {
                pairingKnown = false
            }
        }
        var word: String?
        if let value = object["pairable"], let text = context.string(value, object.path("pairable")) {
            if Self.pairableWords.contains(text) {
                word = text
            } else {
                context.error(
                    object.path("pairable"),
                    "\"\(text)\" is not one of \"always\", \"never\", \"window\""
                        + EditDistance.hint(for: text, among: Self.pairableWords))
            }
        }
        var seconds: Int?
        if let value = object["pairableSeconds"],
            let number = context.integer(value, object.path("pairableSeconds"), in: SecurityDefinition.windowRange)
        {
            seconds = Int(number)
            if let word, word != "window" {
                context.error(
                    object.path("pairableSeconds"), "\"pairableSeconds\" applies only with \"pairable\": \"window\"")
            }
        }
        switch word {
        case "always": result.pairable = .always
        case "never": result.pairable = .never
        default: result.pairable = .window(seconds: seconds ?? SecurityDefinition.defaultWindowSeconds)
        }
        if let value = object["bondedOnly"], let flag = context.bool(value, object.path("bondedOnly")) {
            result.bondedOnly = flag
        }
        if let value = object["onPasskey"] { result.onPasskey = passkeyProgram(value, object.path("onPasskey")) }
        if let value = object["onConfirm"] {
            result.onConfirm = passkeyProgram(value, object.path("onConfirm"), keys: ["argv"])
        }
        if let value = object["confirmSeconds"],
            let number = context.integer(value, object.path("confirmSeconds"), in: SecurityDefinition.confirmRange)
        {
            result.confirmSeconds = Int(number)
        }
        if !pairingKnown {
            // The mode is unknown: which keys fit it is too.
        } else if result.pairing == .none {
            // Nothing to open or display without an agent: a stray key is a misunderstanding.
            for key in ["pairable", "pairableSeconds", "onPasskey"] where object[key] != nil {
                context.error(
                    object.path(key),
                    "\"\(key)\" needs gattd to pair, but \"pairing\" is \"none\" "
                        + "(set \"pairing\": \"just-works\" or \"display-passkey\")")
            }
        } else if result.pairing != .displayPasskey, object["onPasskey"] != nil {
            context.error(
                object.path("onPasskey"),
                "\"onPasskey\" runs only with \"pairing\": \"display-passkey\" (\(result.pairing.rawValue) shows no passkey)")
        }
        if pairingKnown, result.pairing != .numericComparison {
            // Only numeric comparison waits for a decision.
            for key in ["onConfirm", "confirmSeconds"] where object[key] != nil {
                context.error(
                    object.path(key),
                    "\"\(key)\" applies only with \"pairing\": \"numeric-comparison\" "
                        + "(\(result.pairing.rawValue) asks nobody to confirm)")
            }
        }
        return result
    }

    private mutating func passkeyProgram(
        _ value: JSONValue, _ path: String, keys: [String] = Self.passkeyProgramKeys
    ) -> SecurityDefinition.PasskeyProgram? {
        guard let object = context.object(value, path, allowed: keys) else { return nil }
        let before = context.issues.count
        var argv: [String]?
        if let value = object.required("argv", &context), let strings = context.strings(value, object.path("argv")) {
            if strings.first?.isEmpty ?? true {
                context.error(object.path("argv"), "argv must name a program")
            } else {
                argv = strings
            }
        }
        let timeout = object["timeoutMs"].flatMap {
            context.integer($0, object.path("timeoutMs"), in: 1...120_000)
        }
        guard context.issues.count == before, let argv else { return nil }
        return SecurityDefinition.PasskeyProgram(
            argv: argv, timeoutMs: timeout.map(Int.init) ?? SecurityDefinition.PasskeyProgram.defaultTimeoutMs)
    }
}
