// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Foundation
import Mainloop
import TestSupport

/// Parses a configuration that the test knows to be valid.
func liveConfiguration(_ json: String) throws -> Configuration {
    try ConfigurationLoader.parse(Array(json.utf8)).get().configuration
}

/// A service and its runtime built by the factory as the daemon builds them, with nothing
/// saved and all its time on `scheduler`: for suites that check reads, writes and
/// notifications, not saves or hooks. `sources`: the value sources, the daemon's unless a
/// test gives its own.
func unsavedService(
    _ configuration: Configuration, scheduler: ManualScheduler,
    sources: @escaping RuntimeFactory.Sources = UpdateScheduler.daemonSources
) throws -> (service: RequestService, runtime: Runtime) {
    let factory = RuntimeFactory(
        loop: try EventLoop(), state: .none, scheduling: scheduler.scheduling, sources: sources, logger: quietLogger)
    return factory.makeService(configuration)
}

/// A scratch directory with small files and executable scripts.
final class ScratchDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "gattd-live-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    @discardableResult
    func file(_ name: String, _ contents: String) throws -> String {
        let full = path + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: full))
        return full
    }

    /// A `/bin/sh` script, made executable.
    func script(_ name: String, _ body: String) throws -> String {
        let full = try file(name, "#!/bin/sh\n" + body + "\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: full)
        return full
    }

    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: path + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    func bytes(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path + "/" + name).map { Array($0) }
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
