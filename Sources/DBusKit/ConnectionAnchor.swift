// SPDX-License-Identifier: MIT

/// A `BusConnection` as the objects that may outlive it hold it (a call kept to answer
/// later, a signal subscription): the connection while it exists, nil from its `deinit` on.
///
/// Instead of a weak reference: the first weak reference to an object gives it a side table
/// for good, and every retain and release of it then takes the runtime's slow path, several
/// per method call for the connection (BENCHMARKS.md). Loop thread only, like the
/// connection itself.
final class ConnectionAnchor {
    unowned(unsafe) var connection: BusConnection?
}
