// SPDX-License-Identifier: MIT

import Logging

/// Builds the `KEY=value` fields of one journal entry (the pure half of `JournalLogHandler`).
///
/// Field order: `MESSAGE`, `PRIORITY`, `SYSLOG_IDENTIFIER`, `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC`, `CODE_MODULE` (swift-log's `source`), `ERROR` (when the event carries
/// one), then one field per metadata key sorted by field name. Values are passed as-is,
/// newlines included: `sd_journal_sendv` encodes them binary-safely.
public enum JournalFields {
    /// Longest field name journald accepts.
    public static let maximumNameLength = 64
    /// The name used for a metadata key that has no usable character (empty, all punctuation).
    public static let fallbackName = "GATTD_FIELD"
    /// Prefixed to a name that would start with a digit or that would shadow a field the
    /// handler sets itself (`message` -> `X_MESSAGE`).
    public static let escapePrefix = "X_"
    /// Fields the handler fills; metadata cannot override them.
    public static let reservedNames: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
        "CODE_MODULE", "ERROR",
    ]

    /// The journal fields for one log event, each `NAME=value`.
    public static func make(
        level: Logger.Level,
        message: String,
        metadata: Logger.Metadata,
        source: String,
        file: String,
        function: String,
        line: UInt,
        identifier: String,
        error: (any Error)? = nil
    ) -> [String] {
        var fields = [
            "MESSAGE=\(message)",
            "PRIORITY=\(priority(for: level))",
            "SYSLOG_IDENTIFIER=\(identifier)",
            "CODE_FILE=\(file)",
            "CODE_LINE=\(line)",
            "CODE_FUNC=\(function)",
            "CODE_MODULE=\(source)",
        ]
        if let error { fields.append("ERROR=\(error)") }
        let named = metadata.map { (name: fieldName(for: $0.key), value: $0.value.description) }
        for entry in named.sorted(by: { ($0.name, $0.value) < ($1.name, $1.value) }) {
            fields.append("\(entry.name)=\(entry.value)")
        }
        return fields
    }

    /// The syslog priority journald stores for a swift-log level
    /// (trace and debug 7, info 6, notice 5, warning 4, error 3, critical 2).
    public static func priority(for level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// A valid journald field name for a metadata key.
    ///
    /// ASCII letters are upper-cased, digits and `_` kept, every other character becomes
    /// `_`; leading `_` are dropped (they mark trusted fields); a leading digit or a
    /// reserved name gets `escapePrefix`; the result is cut to 64 characters; a key with
    /// nothing left becomes `fallbackName`. `char.uuid` -> `CHAR_UUID`, `gatt-id` -> `GATT_ID`.
    public static func fieldName(for key: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(key.utf8.count)
        for scalar in key.unicodeScalars {
            switch scalar.value {
            case 0x41...0x5A, 0x30...0x39, 0x5F: bytes.append(UInt8(scalar.value))
            case 0x61...0x7A: bytes.append(UInt8(scalar.value) - 0x20)
            default: bytes.append(0x5F)
            }
        }
        let trimmed = bytes.drop(while: { $0 == 0x5F })
        guard let first = trimmed.first else { return fallbackName }
        var name = String(decoding: trimmed, as: UTF8.self)
        if (0x30...0x39).contains(first) || reservedNames.contains(name) {
            name = escapePrefix + name
        }
        return String(name.prefix(maximumNameLength))
    }
}
