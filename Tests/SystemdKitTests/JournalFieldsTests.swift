// SPDX-License-Identifier: MIT

import Logging
import Testing

import SystemdKit

struct JournalFieldsTests {
    @Test(arguments: [
        ("char.uuid", "CHAR_UUID"),
        ("gatt-id", "GATT_ID"),
        ("GATT_ID", "GATT_ID"),
        ("device", "DEVICE"),
        ("att error", "ATT_ERROR"),
        ("_private", "PRIVATE"),
        ("__x", "X"),
        ("2fa", "X_2FA"),
        ("-1", "X_1"),
        ("message", "X_MESSAGE"),
        ("priority", "X_PRIORITY"),
        ("message_id", "MESSAGE_ID"),
        ("température", "TEMP_RATURE"),
        ("", "GATTD_FIELD"),
        ("...", "GATTD_FIELD"),
        ("温度", "GATTD_FIELD"),
    ])
    func metadataKeysBecomeValidFieldNames(key: String, expected: String) {
        #expect(JournalFields.fieldName(for: key) == expected)
    }

    @Test func longKeysAreCutTo64Characters() {
        let name = JournalFields.fieldName(for: String(repeating: "k", count: 100))
        #expect(name == String(repeating: "K", count: 64))
        let prefixed = JournalFields.fieldName(for: "9" + String(repeating: "a", count: 70))
        #expect(prefixed.count == 64)
        #expect(prefixed.hasPrefix("X_9AAA"))
    }

    @Test(arguments: [
        (Logger.Level.trace, 7), (.debug, 7), (.info, 6), (.notice, 5),
        (.warning, 4), (.error, 3), (.critical, 2),
    ])
    func levelsMapToSyslogPriorities(level: Logger.Level, priority: Int) {
        #expect(JournalFields.priority(for: level) == priority)
        let fields = JournalFields.make(
            level: level, message: "m", metadata: [:], source: "s", file: "f", function: "g",
            line: 1, identifier: "gattd")
        #expect(fields.contains("PRIORITY=\(priority)"))
    }

    @Test func entryCarriesMessageSourceAndSortedMetadata() {
        let fields = JournalFields.make(
            level: .debug,
            message: "read value\nsecond line",
            metadata: ["gatt-id": "hr-measurement", "operation": "read", "char.uuid": "2a37", "att_error": .stringConvertible(0x0e)],
            source: "BlueZ",
            file: "BlueZ/Characteristic.swift",
            function: "handle(_:)",
            line: 42,
            identifier: "gattd"
        )
        #expect(fields == [
            "MESSAGE=read value\nsecond line",
            "PRIORITY=7",
            "SYSLOG_IDENTIFIER=gattd",
            "CODE_FILE=BlueZ/Characteristic.swift",
            "CODE_LINE=42",
            "CODE_FUNC=handle(_:)",
            "CODE_MODULE=BlueZ",
            "ATT_ERROR=14",
            "CHAR_UUID=2a37",
            "GATT_ID=hr-measurement",
            "OPERATION=read",
        ])
    }

    @Test func metadataCannotShadowHandlerFields() {
        let fields = JournalFields.make(
            level: .info, message: "real", metadata: ["message": "fake", "syslog.identifier": "evil"],
            source: "s", file: "f", function: "g", line: 1, identifier: "gattd")
        #expect(fields.filter { $0.hasPrefix("MESSAGE=") } == ["MESSAGE=real"])
        #expect(fields.filter { $0.hasPrefix("SYSLOG_IDENTIFIER=") } == ["SYSLOG_IDENTIFIER=gattd"])
        #expect(fields.contains("X_MESSAGE=fake"))
        #expect(fields.contains("X_SYSLOG_IDENTIFIER=evil"))
    }

    @Test func structuredValuesAndErrorsAreRenderedAsText() {
        struct Boom: Error, CustomStringConvertible { var description: String { "boom" } }
        let fields = JournalFields.make(
            level: .error, message: "m",
            metadata: ["handles": ["1", "2"], "map": ["a": "b"]],
            source: "s", file: "f", function: "g", line: 1, identifier: "gattd", error: Boom())
        #expect(fields.contains("ERROR=boom"))
        #expect(fields.contains(#"HANDLES=["1", "2"]"#))
        #expect(fields.contains(#"MAP=["a": "b"]"#))
    }
}
