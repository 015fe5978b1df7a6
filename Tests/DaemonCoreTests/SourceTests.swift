// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import Mainloop
import Testing

/// The reading a synchronous source gives on its next tick.
private func reading(_ source: any ValueSource) -> Result<SourceReading, SourceFailure>? {
    var result: Result<SourceReading, SourceFailure>?
    source.next { result = $0 }
    return result
}

private func numbers(_ source: any ValueSource, _ count: Int) -> [Double] {
    (0..<count).compactMap { _ in
        if case .success(.number(let value)) = reading(source) { return value }
        return nil
    }
}

@Suite("Value sources")
struct SourceTests {
    @Test("counter starts at start, steps, wraps past max to min, and records each value")
    func counterWraps() {
        var recorded: [Int64] = []
        let counter = CounterSource(start: 178, step: 1, min: 60, max: 180, record: { recorded.append($0) })
        #expect(numbers(counter, 5) == [178, 179, 180, 60, 61])
        #expect(recorded == [178, 179, 180, 60, 61])
    }

    @Test("a negative step wraps past min to max")
    func counterNegative() {
        let counter = CounterSource(start: 2, step: -2, min: 0, max: 9)
        #expect(numbers(counter, 4) == [2, 0, 9, 7])
    }

    @Test("counter resumes after its saved value; a saved value out of bounds is ignored")
    func counterResumes() {
        #expect(numbers(CounterSource(start: 60, step: 5, min: 60, max: 180, resumeFrom: 100), 2) == [105, 110])
        #expect(numbers(CounterSource(start: 60, step: 5, min: 60, max: 180, resumeFrom: 500), 1) == [60])
    }

    @Test("counter near Int64.max wraps instead of trapping")
    func counterOverflow() {
        let counter = CounterSource(start: .max - 1, step: 5, min: 0, max: .max)
        #expect(numbers(counter, 2) == [Double(Int64.max - 1), 0])
    }

    @Test("random is reproducible with a seed, stays in range, and integer gives whole numbers")
    func randomSeeded() {
        let first = numbers(RandomSource(min: 60, max: 90, integer: true, generator: SeededGenerator(seed: 7)), 200)
        let again = numbers(RandomSource(min: 60, max: 90, integer: true, generator: SeededGenerator(seed: 7)), 200)
        #expect(first == again)
        #expect(first.allSatisfy { (60...90).contains($0) && $0 == $0.rounded() })
        #expect(Set(first).count > 10, "a uniform source over 31 values visits many of them")
        let real = numbers(RandomSource(min: -1.5, max: 1.5, integer: false, generator: SeededGenerator(seed: 1)), 100)
        #expect(real.allSatisfy { (-1.5...1.5).contains($0) })
        #expect(real.contains { $0 != $0.rounded() })
    }

    @Test("file number applies scale and offset; text is trimmed; bytes are raw")
    func fileFormats() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let temp = try dir.file("temp", "45123\n")
        #expect(reading(FileSource(path: temp, format: .number, scale: 0.1, offset: 0)) == .success(.number(4512.3)))
        #expect(reading(FileSource(path: temp, format: .number, scale: 1, offset: -123)) == .success(.number(45000)))
        let text = try dir.file("text", "  up 3 hours \n")
        #expect(reading(FileSource(path: text, format: .text)) == .success(.text("up 3 hours")))
        #expect(reading(FileSource(path: text, format: .bytes)) == .success(.bytes(Array("  up 3 hours \n".utf8))))
    }

    @Test("file failures name their kind: missing file, not a number")
    func fileFailures() throws {
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let missing = FileSource(path: dir.path + "/absent", format: .number)
        #expect(reading(missing) == .failure(SourceFailure(kind: "open: No such file or directory", detail: dir.path + "/absent")))
        let garbage = try dir.file("garbage", "hot\n")
        guard case .failure(let failure) = reading(FileSource(path: garbage, format: .number)) else {
            Issue.record("garbage parsed as a number")
            return
        }
        #expect(failure.kind == "not a number")
        #expect(failure.detail == "\"hot\"")
    }

    @Test("command stdout is read as a number or as text; the source is busy while it runs")
    func commandReads() throws {
        let loop = try EventLoop()
        let number = CommandSource(argv: ["/bin/echo", " 72 "], timeout: .seconds(5), format: .number, loop: loop)
        var result: Result<SourceReading, SourceFailure>?
        number.next { result = $0 }
        #expect(number.isBusy)
        #expect(loop.run(until: { result != nil }, timeout: .seconds(10)))
        #expect(result == .success(.number(72)))
        #expect(!number.isBusy)

        let text = CommandSource(argv: ["/bin/echo", "all good"], timeout: .seconds(5), format: .text, loop: loop)
        result = nil
        text.next { result = $0 }
        #expect(loop.run(until: { result != nil }, timeout: .seconds(10)))
        #expect(result == .success(.text("all good")))
    }

    @Test("command failures: exit status, timeout, unparsable output, missing program")
    func commandFailures() throws {
        let loop = try EventLoop()
        func kind(_ argv: [String], timeout: Duration = .seconds(5)) -> String? {
            let source = CommandSource(argv: argv, timeout: timeout, format: .number, loop: loop)
            var result: Result<SourceReading, SourceFailure>?
            source.next { result = $0 }
            loop.run(until: { result != nil }, timeout: .seconds(10))
            if case .failure(let failure) = result { return failure.kind }
            return nil
        }
        #expect(kind(["/bin/sh", "-c", "echo 5; exit 2"]) == "exit status 2")
        #expect(kind(["/bin/sleep", "30"], timeout: .milliseconds(100)) == "timed out")
        #expect(kind(["/bin/echo", "n/a"]) == "not a number")
        #expect(kind(["/nonexistent/prog"]) == "cannot start")
    }
}
