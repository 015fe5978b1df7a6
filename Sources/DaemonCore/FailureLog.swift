// SPDX-License-Identifier: MIT

public import Logging

/// Logs a recurring failure once per kind instead of on every tick, and logs once when
/// things work again.
///
/// A warning when the kind of failure changes (first failure, or a different one), a
/// notice with `what` when a success follows a failure; repeats are silent.
public final class FailureLog {
    private let logger: Logger
    private let metadata: Logger.Metadata
    /// The kind of the failure being suppressed, nil while healthy.
    public private(set) var currentKind: String?
    /// How many failures were logged (not counting suppressed repeats).
    public private(set) var loggedFailures = 0

    public init(logger: Logger, metadata: Logger.Metadata) {
        self.logger = logger
        self.metadata = metadata
    }

    /// Records a failure; logs it when its kind differs from the previous one.
    public func failed(_ message: String, kind: String, detail: String = "") {
        guard kind != currentKind else { return }
        currentKind = kind
        loggedFailures += 1
        var fields = metadata
        fields["error"] = "\(kind)"
        if !detail.isEmpty { fields["detail"] = "\(detail)" }
        logger.warning("\(message); keeping the last value (logged once until it changes)", metadata: fields)
    }

    /// Records a success; logs the recovery after a failure.
    public func succeeded(_ message: String) {
        guard let kind = currentKind else { return }
        currentKind = nil
        var fields = metadata
        fields["was"] = "\(kind)"
        logger.notice("\(message)", metadata: fields)
    }
}
