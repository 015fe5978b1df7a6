// SPDX-License-Identifier: MIT

internal import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// The slice gattd asks the kernel's fair scheduler for (`sched_setattr(2)` with
/// `sched_runtime`, honoured for `SCHED_OTHER`/`SCHED_BATCH` since Linux 6.12).
///
/// Why: gattd's work comes in short bursts that end with a message sent and a wait. With the
/// default slice, the process a reply wakes (the bus daemon, bluetoothd) often preempts
/// gattd between the send and the wait, so gattd is switched out and back in only to go to
/// sleep. With a slice of its own gattd reaches its wait first (BENCHMARKS.md, "Fewer
/// context switches"). It changes no priority: the nice value and the policy stay as found.
public enum SchedulerSlice {
    /// `SCHED_BATCH` (<sched.h> defines it only under `_GNU_SOURCE`).
    static let schedBatch: Int32 = 3

    /// The slice gattd asks for.
    public static let gattdNanoseconds: UInt64 = 1_000_000

    /// What `request` did.
    public enum Outcome: Equatable, Sendable {
        /// The kernel now gives the calling thread this slice.
        case set(nanoseconds: UInt64)
        /// The kernel took the call but keeps its own slice (before Linux 6.12).
        case unsupported
        /// The thread runs under another policy (real-time, deadline or idle): left alone.
        case otherPolicy(Int32)
    }

    /// The calling thread's scheduling attributes (`sched_getattr`).
    private static func attributes() throws(SystemCallError) -> clinux_sched_attr {
        var attr = clinux_sched_attr()
        try SystemCall.check("sched_getattr") { clinux_sched_getattr(&attr) }
        return attr
    }

    /// Asks for `nanoseconds` (the kernel clamps it to 0.1-100 ms) for the calling thread,
    /// keeping its policy and nice value; reads it back to say whether it took.
    public static func request(nanoseconds: UInt64) throws(SystemCallError) -> Outcome {
        var attr = try attributes()
        let policy = Int32(attr.sched_policy)
        guard policy == SCHED_OTHER || policy == schedBatch else { return .otherPolicy(policy) }
        attr.sched_flags = 0
        attr.sched_runtime = nanoseconds
        attr.sched_deadline = 0
        attr.sched_period = 0
        try SystemCall.check("sched_setattr") { clinux_sched_setattr(&attr) }
        return try attributes().sched_runtime == nanoseconds ? .set(nanoseconds: nanoseconds) : .unsupported
    }
}
