// SPDX-License-Identifier: MIT

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Entry point: bytes or a file in, a validated `Configuration` (plus warnings) or every
/// issue found out.
public enum ConfigurationLoader {
    /// Files larger than this are refused rather than read.
    public static let maximumFileSize = 4 << 20

    /// Parses, decodes and validates a configuration document.
    ///
    /// Success carries the configuration (all ids set) and its warnings; failure carries
    /// every error and warning, sorted by position in the file (file-level issues first).
    public static func parse(_ bytes: [UInt8]) -> Result<LoadedConfiguration, ConfigurationErrors> {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            return .failure(
                ConfigurationErrors(issues: [
                    ConfigurationIssue(
                        path: "", message: error.message, line: error.position.line, column: error.position.column)
                ]))
        }
        var decoder = ConfigurationDecoder()
        let decoded = decoder.decode(root)
        var context = decoder.context
        if var configuration = decoded {
            configuration.assignDerivedIdentifiers(absent: decoder.absentIDs)
            configuration.validate(into: &context, damaged: decoder.damaged, absentIDs: decoder.absentIDs)
            let issues = sorted(context.issues)
            if !context.hasErrors {
                return .success(LoadedConfiguration(configuration: configuration, warnings: issues))
            }
        }
        return .failure(ConfigurationErrors(issues: sorted(context.issues)))
    }

    /// Reads `path` with `open`/`read` and parses it.
    ///
    /// An unreadable file (missing, permission, a directory, too large) fails with one
    /// issue whose message names the path and the `errno` text.
    public static func load(path: String) -> Result<LoadedConfiguration, ConfigurationErrors> {
        readFile(path).flatMap(parse)
    }

    private static func readFile(_ path: String) -> Result<[UInt8], ConfigurationErrors> {
        func failure(_ reason: String) -> Result<[UInt8], ConfigurationErrors> {
            .failure(ConfigurationErrors(issues: [ConfigurationIssue(path: "", message: "cannot read \"\(path)\": \(reason)")]))
        }
        func errnoText(_ code: Int32) -> String {
            strerror(code).map { String(cString: $0) } ?? "error \(code)"
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return failure(errnoText(errno)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return failure(errnoText(errno))
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > maximumFileSize { return failure("larger than \(maximumFileSize) bytes") }
        }
        return .success(bytes)
    }

    private static func sorted(_ issues: [ConfigurationIssue]) -> [ConfigurationIssue] {
        issues.enumerated().sorted { a, b in
            let left = (a.element.line ?? 0, a.element.column ?? 0, a.offset)
            let right = (b.element.line ?? 0, b.element.column ?? 0, b.offset)
            return left < right
        }.map(\.element)
    }
}
