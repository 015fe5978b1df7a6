// SPDX-License-Identifier: MIT

/// The settings of bluetoothd's `main.conf` that change what a peripheral can do, read
/// from the file's text (an INI file: `[Section]`, `Key = value`, `#` comments).
public enum MainConfSettings {
    /// section, key, bluetoothd's default, effect on a peripheral.
    static let watched: [(section: String, key: String, defaultValue: String, effect: String)] = [
        ("General", "ControllerMode", "dual", "bredr switches LE (advertising, GATT over LE) off"),
        ("General", "Experimental", "false",
            "before 5.77, advertisement intervals and TX power are honoured only with experimental features"),
        ("General", "Privacy", "off",
            "device/network: the adapter advertises a resolvable private address; centrals need its IRK to recognise it"),
        ("General", "SecureConnections", "on",
            "only: centrals without LE Secure Connections cannot pair; off: legacy pairing only"),
        ("General", "JustWorksRepairing", "never",
            "never: a central that lost its keys cannot pair again with Just Works until the bond is removed here"),
        ("GATT", "KeySize", "0 (any, 7 to 16)", "a larger minimum refuses encrypted access to centrals with shorter keys"),
        ("GATT", "Cache", "always", "how bluetoothd caches remote databases; no effect on the services gattd serves"),
        ("GATT", "ExchangeMTU", "517", "the largest ATT MTU bluetoothd offers: a smaller one shortens reads and notifications"),
        ("GATT", "Channels", "3 in 5.66, 1 in 5.82 and 5.87", "EATT channels; 1 means ATT only"),
        ("GATT", "Security", "auto (5.87+; earlier releases ignore it)",
            "5.87+: anything but auto needs [General] Testing = true; low turns the attribute permissions off, so "
                + "encrypt-* and authenticated flags are not enforced"),
    ]

    /// Each watched setting with the file's value (nil when the file does not set it; a
    /// commented-out line does not count).
    public static func read(_ text: String) -> [DoctorFacts.Setting] {
        var section = ""
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                if let end = line.firstIndex(of: "]") {
                    section = String(line[line.index(after: line.startIndex)..<end]).trimmingSpaces()
                }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]).trimmingSpaces()
            let value = String(line[line.index(after: equals)...]).trimmingSpaces()
            values[section + "." + key] = value
        }
        return watched.map { entry in
            DoctorFacts.Setting(
                section: entry.section, key: entry.key, value: values[entry.section + "." + entry.key],
                defaultValue: entry.defaultValue, effect: entry.effect)
        }
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
