// SPDX-License-Identifier: MIT

/// Entry point: bytes in, a validated `Configuration` (plus warnings) or every issue
/// found out. Reading the file is the caller's (`ConfigurationFile` in DaemonCore):
/// BLEModel does no I/O.
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
            configuration.validate(into: &context, absentIDs: decoder.absentIDs)
            let issues = sorted(context.issues)
            if !context.hasErrors {
                return .success(LoadedConfiguration(configuration: configuration, warnings: issues))
            }
        }
        return .failure(ConfigurationErrors(issues: sorted(context.issues)))
    }

    private static func sorted(_ issues: [ConfigurationIssue]) -> [ConfigurationIssue] {
        issues.enumerated().sorted { a, b in
            let left = (a.element.line ?? 0, a.element.column ?? 0, a.offset)
            let right = (b.element.line ?? 0, b.element.column ?? 0, b.offset)
            return left < right
        }.map(\.element)
    }
}
