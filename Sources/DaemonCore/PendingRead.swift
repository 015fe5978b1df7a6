// SPDX-License-Identifier: MIT

public import BLEModel

/// A read a program's handler answers later; the caller says what to do with the answer.
/// Lives on the loop thread; the answer is delivered exactly once.
public final class PendingRead {
    private var result: Result<ArraySlice<UInt8>, GATTError>?
    private var done: ((Result<ArraySlice<UInt8>, GATTError>) -> Void)?

    init() {}

    /// Runs `body` with the answer: now if it is already there, else when it arrives.
    public func whenDone(_ body: @escaping (Result<ArraySlice<UInt8>, GATTError>) -> Void) {
        if let result {
            body(result)
        } else {
            done = body
        }
    }

    func finish(_ answer: Result<ArraySlice<UInt8>, GATTError>) {
        guard result == nil else { return }
        result = answer
        if let done {
            self.done = nil
            done(answer)
        }
    }
}
