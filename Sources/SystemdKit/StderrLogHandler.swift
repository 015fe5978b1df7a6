// SPDX-License-Identifier: MIT

import Glibc
import Logging
import SystemCalls

/// A swift-log handler writing one line per message, `level: message key=value …`,
/// to a file descriptor (stderr by default).
///
/// No timestamp: under systemd without journald's native socket, or in a terminal, the
/// reader adds its own. Newlines and other control characters in the message or values
/// are escaped (`\n`), values with spaces, quotes or `=` are double-quoted, and keys are
/// sorted, so one message is always exactly one line. Each line is written with a single
/// `write(2)` so lines from different threads do not interleave.
public struct StderrLogHandler: LogHandler {
    /// The descriptor lines are written to.
    public let fileDescriptor: Int32
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata
    public var metadataProvider: Logger.MetadataProvider?

    public init(
        fileDescriptor: Int32 = STDERR_FILENO,
        logLevel: Logger.Level = .info,
        metadata: Logger.Metadata = [:],
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.fileDescriptor = fileDescriptor
        self.logLevel = logLevel
        self.metadata = metadata
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = mergedMetadata(handler: metadata, provider: metadataProvider, call: event.metadata)
        if let error = event.error { merged["error"] = "\(error)" }
        let line = Self.formatLine(level: event.level, message: event.message.description, metadata: merged)
        Self.write(line, to: fileDescriptor)
    }

    /// The line for one message, newline included.
    public static func formatLine(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var line = "\(level): \(escaped(message))"
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            line += " \(escaped(key))=\(rendered(value.description))"
        }
        return line + "\n"
    }

    /// Writes the whole string, retrying on `EINTR` and short writes; other errors drop it.
    static func write(_ line: String, to fd: Int32) {
        var line = line
        line.withUTF8 { bytes in _ = try? SystemCall.writeAll(fd, UnsafeRawBufferPointer(bytes)) }
    }

    /// Control characters become `\n`, `\r`, `\t` or `\xNN`; with `quoting`, `"` and `\`
    /// are backslash-escaped too and the result is wrapped in double quotes.
    private static func escaped(_ text: String, quoting: Bool = false) -> String {
        let special: (Unicode.Scalar) -> Bool = {
            $0.value < 0x20 || $0.value == 0x7F || (quoting && ($0 == "\"" || $0 == "\\"))
        }
        guard quoting || text.unicodeScalars.contains(where: special) else { return text }
        var out = quoting ? "\"" : ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\"" where quoting, "\\" where quoting: out += "\\" + String(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return quoting ? out + "\"" : out
    }

    /// A metadata value, double-quoted when empty or containing a space, `"` or `=`.
    private static func rendered(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" }
        return escaped(value, quoting: needsQuotes)
    }
}
