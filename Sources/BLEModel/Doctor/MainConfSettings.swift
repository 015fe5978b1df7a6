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

    /// What `[GATT] Channels` (`value`: the file's, nil when unset) means for phones on
    /// bluetoothd `version` (nil: not learnt), in one sentence (docs/bluez-contract.md §13).
    public static func channelsForPhones(_ value: String?, version: BlueZVersion?) -> String {
        // 5.67 made 1 the default and left opening EATT bearers to the side that started
        // the connection, on an encrypted link only (BlueZ commits ab3ff0d2c, 1033a4623).
        let changed = BlueZVersion(5, 67)
        let channels: Int
        if let value {
            guard let number = Int(value), number >= 1 else {
                return "Channels = \(value) is not a number of channels: bluetoothd keeps its default"
            }
            channels = number
        } else if let version {
            channels = version < changed ? 3 : 1
        } else {
            return "bluetoothd's version is unknown: unset means 3 (EATT on) up to 5.66 and 1 (ATT only) from 5.67"
        }
        if channels == 1 {
            return "ATT only: a phone has one request under way at a time and opens no EATT bearer"
        }
        let bearers = "up to \(channels - 1) EATT bearer\(channels == 2 ? "" : "s") per phone besides ATT, "
            + "one request under way on each (gattd serves them at once)"
        let early =
            "bluetoothd up to 5.66 opens them itself to any phone that offers EATT (Android 13 and later), "
            + "paired or not; phones dropping after about 29 s or pairing in a loop went away with Channels = 1"
        let late = "from 5.67 only the phone opens them, and only once the link is encrypted (a paired phone)"
        guard let version else { return bearers + "; " + early + "; " + late }
        return bearers + "; " + (version < changed ? early : late)
    }

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
