// SPDX-License-Identifier: MIT

/// A configuration that passed validation, with the warnings it produced.
public struct LoadedConfiguration: Sendable {
    public var configuration: Configuration
    /// Issues of severity `.warning`, in file order; log them at startup.
    public var warnings: [ConfigurationIssue]

    public init(configuration: Configuration, warnings: [ConfigurationIssue]) {
        self.configuration = configuration
        self.warnings = warnings
    }
}
