// SPDX-License-Identifier: MIT

public import BLEModel
import Glibc
import SystemCalls

/// The configuration file: read through the system-call layer, parsed by BLEModel.
public enum ConfigurationFile {
    /// Reads `path` and parses it (`ConfigurationLoader.parse`).
    ///
    /// An unreadable file (missing, permission, a directory, larger than
    /// `ConfigurationLoader.maximumFileSize`) fails with one issue whose message names the
    /// path and the `errno` text.
    public static func load(path: String) -> Result<LoadedConfiguration, ConfigurationErrors> {
        let bytes: [UInt8]
        do throws(SystemCallError) {
            bytes = try SystemCall.readFile(path, limit: ConfigurationLoader.maximumFileSize)
        } catch {
            let reason = error.code == EFBIG ? "larger than \(ConfigurationLoader.maximumFileSize) bytes" : error.reason
            return .failure(
                ConfigurationErrors(issues: [ConfigurationIssue(path: "", message: "cannot read \"\(path)\": \(reason)")]))
        }
        return ConfigurationLoader.parse(bytes)
    }
}
