// SPDX-License-Identifier: MIT

import Glibc
import Logging

/// A swift-log handler that writes structured entries to journald with `sd_journal_sendv`.
///
/// Every metadata key becomes its own journal field (see `JournalFields.fieldName(for:)`),
/// so `journalctl -u gattd GATT_ID=hr-measurement` filters on it. If journald refuses the
/// entry (socket gone, journald restarting) the line goes to stderr instead, which systemd
/// also collects, so nothing is lost silently.
public struct JournalLogHandler: LogHandler {
    /// `SYSLOG_IDENTIFIER` of every entry.
    public let identifier: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata
    public var metadataProvider: Logger.MetadataProvider?

    /// - Parameters:
    ///   - identifier: the `SYSLOG_IDENTIFIER` (`journalctl -t`), "gattd" by default.
    ///   - logLevel: the lowest level passed on; the daemon applies `--log-level` here.
    public init(
        identifier: String = "gattd",
        logLevel: Logger.Level = .info,
        metadata: Logger.Metadata = [:],
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.identifier = identifier
        self.logLevel = logLevel
        self.metadata = metadata
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = mergedMetadata(handler: metadata, provider: metadataProvider, call: event.metadata)
        let fields = JournalFields.make(
            level: event.level,
            message: event.message.description,
            metadata: merged,
            source: event.source,
            file: event.file,
            function: event.function,
            line: event.line,
            identifier: identifier,
            error: event.error
        )
        if JournalSender.send(fields) < 0 {
            let line = StderrLogHandler.formatLine(
                level: event.level, message: event.message.description, metadata: merged)
            StderrLogHandler.write(line, to: STDERR_FILENO)
        }
    }
}
