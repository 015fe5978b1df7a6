// SPDX-License-Identifier: MIT

import BLEModel
import Foundation

/// Locates test fixtures next to this source file (no bundles).
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func names(in folder: String, extension ext: String = "json") -> [String] {
        let url = directory.appendingPathComponent(folder)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return files.filter { $0.hasSuffix("." + ext) }.map { String($0.dropLast(ext.count + 1)) }.sorted()
    }

    static func path(_ folder: String, _ name: String, _ ext: String = "json") -> String {
        directory.appendingPathComponent(folder).appendingPathComponent("\(name).\(ext)").path
    }

    /// Parses the file at `path` (read here: BLEModel takes bytes, not files).
    static func load(path: String) -> Result<LoadedConfiguration, ConfigurationErrors> {
        let data = FileManager.default.contents(atPath: path) ?? Data()
        return ConfigurationLoader.parse([UInt8](data))
    }

    static func text(_ folder: String, _ name: String, _ ext: String) throws -> String {
        try String(contentsOfFile: path(folder, name, ext), encoding: .utf8)
    }
}

/// Parses JSON text given inline in a test.
func load(_ text: String) -> Result<LoadedConfiguration, ConfigurationErrors> {
    ConfigurationLoader.parse(Array(text.utf8))
}

/// The issue descriptions of a failed load, or `["<loaded>"]` when it succeeded.
func issueDescriptions(_ text: String) -> [String] {
    switch load(text) {
    case .success: ["<loaded>"]
    case .failure(let errors): errors.issues.map(\.description)
    }
}
