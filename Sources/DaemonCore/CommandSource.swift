// SPDX-License-Identifier: MIT

public import BLEModel
public import Mainloop

/// `{"command": {...}}`: runs `argv` (no shell) on every tick and reads its stdout as a
/// number or as text (trimmed).
///
/// The program runs as a `ChildProcess` on the loop, so a tick only starts it; the
/// reading arrives when it exits. While it runs the source `isBusy`, and the scheduler
/// skips ticks: never two at once. Exit status other than 0, a signal, the timeout, or
/// output that does not parse are failures and keep the current value.
public final class CommandSource: ValueSource {
    public let argv: [String]
    public let timeout: Duration
    public let format: SourceFormat
    private let loop: EventLoop
    private var running: ChildProcess?
    private var generation = 0

    public init(argv: [String], timeout: Duration, format: SourceFormat, loop: EventLoop) {
        self.argv = argv
        self.timeout = timeout
        self.format = format
        self.loop = loop
    }

    public var isBusy: Bool { running != nil }

    public func next(_ done: @escaping (Result<SourceReading, SourceFailure>) -> Void) {
        precondition(running == nil, "the scheduler skips ticks while a command runs")
        generation += 1
        let mine = generation
        do {
            running = try ChildProcess.start(argv: argv, timeout: timeout, loop: loop) { [weak self] finished in
                guard let self, self.generation == mine else { return }
                self.running = nil
                done(self.reading(finished))
            }
        } catch {
            done(.failure(SourceFailure(kind: "cannot start", detail: "\(error)")))
        }
    }

    public func cancel() {
        generation += 1
        running?.kill()
        running = nil
    }

    private func reading(_ finished: ChildProcess.Completion) -> Result<SourceReading, SourceFailure> {
        guard finished.outcome == .exited(0) else {
            return .failure(SourceFailure(kind: "\(finished.outcome)", detail: argv[0]))
        }
        switch format {
        case .number: return SourceText.number(finished.output).map(SourceReading.number)
        case .text, .bytes: return SourceText.text(finished.output).map(SourceReading.text)
        }
    }
}
