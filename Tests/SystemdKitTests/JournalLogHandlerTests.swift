// SPDX-License-Identifier: MIT

import Glibc
import Logging
import Testing

import SystemdKit

/// The handler talking to a fake journald: the datagram sd_journal_sendv writes is decoded
/// with journald's native protocol (`NAME=value\n`, or `NAME\n<le64 length><bytes>\n` for
/// values containing newlines) and checked field by field.
@Suite(.enabled(if: PrivateJournalNamespace.isAvailable, "needs root and mount namespaces"))
struct JournalLogHandlerTests {
    @Test func entryReachesJournaldSocketWithStructuredFields() throws {
        let journal = try DatagramReceiver(name: "journal-socket")
        var handler = JournalLogHandler(identifier: "gattd-test", logLevel: .debug)
        handler[metadataKey: "adapter"] = "hci0"
        let event = LogEvent(
            level: .warning, message: "write rejected\nvalue too long",
            metadata: ["gatt-id": "hr-measurement", "char.uuid": "2a37", "att_error": "0x0d"],
            source: "BlueZ", file: "BlueZ/Write.swift", function: "write(_:)", line: 7)
        // Same field building in the parent first, so the child runs warmed-up code paths.
        _ = JournalFields.make(
            level: .warning, message: "", metadata: ["a": "b"], source: "", file: "", function: "",
            line: 0, identifier: "")

        let step = try PrivateJournalNamespace.run(socketPath: journal.path, timeout: .seconds(10)) {
            handler.log(event: event)
        }
        #expect(step == .done)
        let datagram = try #require(journal.receive())
        let fields = try Self.decodeNativeProtocol(datagram)

        #expect(fields["MESSAGE"] == ["write rejected\nvalue too long"])
        #expect(fields["PRIORITY"] == ["4"])
        #expect(fields["SYSLOG_IDENTIFIER"] == ["gattd-test"])
        #expect(fields["CODE_FILE"] == ["BlueZ/Write.swift"])
        #expect(fields["CODE_LINE"] == ["7"])
        #expect(fields["CODE_FUNC"] == ["write(_:)"])
        #expect(fields["GATT_ID"] == ["hr-measurement"])
        #expect(fields["CHAR_UUID"] == ["2a37"])
        #expect(fields["ATT_ERROR"] == ["0x0d"])
        #expect(fields["ADAPTER"] == ["hci0"])
    }

    /// Decodes one native-protocol datagram into field name -> values.
    static func decodeNativeProtocol(_ bytes: [UInt8]) throws -> [String: [String]] {
        var fields: [String: [String]] = [:]
        var index = 0
        while index < bytes.count {
            guard let newline = bytes[index...].firstIndex(of: 0x0A) else {
                throw TestFailure("unterminated field at byte \(index)")
            }
            let line = bytes[index..<newline]
            if let equals = line.firstIndex(of: 0x3D) {
                let name = String(decoding: line[..<equals], as: UTF8.self)
                fields[name, default: []].append(String(decoding: line[(equals + 1)...], as: UTF8.self))
                index = newline + 1
            } else {
                let name = String(decoding: line, as: UTF8.self)
                let start = newline + 1
                guard start + 8 <= bytes.count else { throw TestFailure("truncated length of \(name)") }
                let length = bytes[start..<start + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
                let valueEnd = start + 8 + length
                guard valueEnd < bytes.count, bytes[valueEnd] == 0x0A else {
                    throw TestFailure("bad binary value of \(name)")
                }
                fields[name, default: []].append(String(decoding: bytes[(start + 8)..<valueEnd], as: UTF8.self))
                index = valueEnd + 1
            }
        }
        return fields
    }
}
