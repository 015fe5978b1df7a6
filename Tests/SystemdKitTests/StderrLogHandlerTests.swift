// SPDX-License-Identifier: MIT

import Glibc
import Logging
import Testing

import SystemdKit

struct StderrLogHandlerTests {
    @Test func formatIsLevelMessageAndSortedPairs() {
        let line = StderrLogHandler.formatLine(
            level: .warning, message: "write rejected",
            metadata: ["gatt.id": "hr-measurement", "att-error": "0x80", "device": "dev_AA_BB"])
        #expect(line == "warning: write rejected att-error=0x80 device=dev_AA_BB gatt.id=hr-measurement\n")
    }

    @Test func oneMessageIsAlwaysOneLine() {
        let line = StderrLogHandler.formatLine(
            level: .error, message: "bad config\nat services[0]",
            metadata: ["path": "/etc/gattd/my file.json", "detail": "a=b\n\"c\"", "empty": ""])
        #expect(line == #"error: bad config\nat services[0] detail="a=b\n\"c\"" empty="" path="/etc/gattd/my file.json""# + "\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
    }

    @Test func handlerWritesMergedMetadataToItsDescriptor() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        var handler = StderrLogHandler(fileDescriptor: fds[1], logLevel: .debug)
        handler[metadataKey: "adapter"] = "hci0"
        handler.metadataProvider = Logger.MetadataProvider { ["device": "dev_1"] }
        let logger = Logger(label: "test") { _ in handler }
        logger.debug("subscribed", metadata: ["device": "dev_2", "gatt-id": "rx"])
        logger.trace("below the level, dropped")
        logger.info("second")
        close(fds[1])

        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fds[0], &chunk, chunk.count)
            if count <= 0 { break }
            output += chunk[..<count]
        }
        #expect(String(decoding: output, as: UTF8.self)
            == "debug: subscribed adapter=hci0 device=dev_2 gatt-id=rx\ninfo: second adapter=hci0 device=dev_1\n")
    }
}
