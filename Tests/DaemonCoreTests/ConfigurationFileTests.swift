// SPDX-License-Identifier: MIT
import BLEModel
import DaemonCore
import Foundation
import Testing

@Suite("Configuration file: read through the system-call layer")
struct ConfigurationFileTests {
    private func failure(_ path: String) -> String? {
        guard case .failure(let errors) = ConfigurationFile.load(path: path) else { return nil }
        return errors.description
    }

    @Test("unreadable files name the path and the errno text")
    func unreadableFile() throws {
        #expect(failure("/nonexistent/gattd.json") == "cannot read \"/nonexistent/gattd.json\": No such file or directory")
        let directory = NSTemporaryDirectory()
        #expect(failure(directory) == "cannot read \"\(directory)\": Is a directory")
    }

    @Test("a file over the size limit is refused, not read")
    func tooLarge() throws {
        let path = NSTemporaryDirectory() + "gattd-large-\(getpid()).json"
        defer { unlink(path) }
        let size = ConfigurationLoader.maximumFileSize + 1
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x20, count: size)))
        #expect(failure(path) == "cannot read \"\(path)\": larger than \(ConfigurationLoader.maximumFileSize) bytes")
    }

    @Test("a readable file is parsed")
    func readable() throws {
        let path = NSTemporaryDirectory() + "gattd-ok-\(getpid()).json"
        defer { unlink(path) }
        let text = #"{"version": 1, "services": [{"id": "s", "uuid": "180F", "characteristics": []}]}"#
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        let loaded = try ConfigurationFile.load(path: path).get()
        #expect(loaded.configuration.services.map(\.id) == ["s"])
    }
}
