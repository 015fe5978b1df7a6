// SPDX-License-Identifier: MIT

/// Where a timed update gets its values.
public enum UpdateSource: Sendable, Equatable {
    /// `start`, then `+ step` each tick; past `max` wraps to `min` (past `min` to `max`
    /// for a negative step). `min <= start <= max`, `step != 0`.
    case counter(start: Int64, step: Int64, min: Int64, max: Int64)
    /// Uniform in `min...max`; whole numbers only when `integer`.
    case random(min: Double, max: Double, integer: Bool)
    /// Reads `path` each tick. `number` values become `value * scale + offset`.
    case file(path: String, format: SourceFormat, scale: Double, offset: Double)
    /// Runs `argv` each tick and reads its standard output (`number` or `text` only).
    case command(argv: [String], timeoutMs: Int, format: SourceFormat)

    /// What the source produces.
    public var format: SourceFormat {
        switch self {
        case .counter, .random: .number
        case .file(_, let format, _, _), .command(_, _, let format): format
        }
    }
}
