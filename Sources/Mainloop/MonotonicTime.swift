// SPDX-License-Identifier: MIT
import CLinux
import Glibc

/// Nanoseconds on CLOCK_MONOTONIC, the loop's only time base.
enum MonotonicTime {
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// `duration` in nanoseconds, saturating; negative durations become 0.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 || (seconds == 0 && attoseconds < 0) { return 0 }
        if seconds >= Int64.max / 1_000_000_000 { return Int64.max / 2 }
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
