// SPDX-License-Identifier: MIT
internal import CDBus
import Mainloop

/// Connects one libdbus connection to an `EventLoop`: its watches become `IOWatch`es, its
/// timeouts `LoopTimer`s, and pending incoming data is dispatched at the end of the turn.
///
/// A separate object from `BusConnection` so libdbus can call back into it while the
/// connection is being torn down. Passed to libdbus unretained; `BusConnection` keeps it
/// alive and uninstalls every callback before releasing it.
final class LoopGlue {
    let loop: EventLoop
    /// `DBusConnection*`.
    let connection: OpaquePointer
    private var watches: [OpaquePointer: IOWatch] = [:]
    private var timeouts: [OpaquePointer: LoopTimer] = [:]
    /// Whether the callbacks are installed and a dispatch is queued: what the end-of-turn
    /// dispatch reads. The job is queued on the loop and may run after the glue is gone, so
    /// it holds this (strongly) rather than a weak reference to the glue: the first weak
    /// reference gives an object a side table for good, and every retain and release of
    /// the glue (each libdbus callback) would then take the runtime's slow path.
    private final class DispatchState {
        var installed = false
        var scheduled = false
    }
    private let state = DispatchState()
    var isInstalled: Bool { state.installed }
    /// The end-of-turn dispatch, made once (not a new closure per turn).
    private lazy var dispatchJob: () -> Void = { [state, connection] in
        state.scheduled = false
        guard state.installed else { return }
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    init(loop: EventLoop, connection: OpaquePointer) {
        self.loop = loop
        self.connection = connection
    }

    func install() {
        let data = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, { watch, data in
            LoopGlue.from(data).addWatch(watch!)
            return 1
        }, { watch, data in
            LoopGlue.from(data).removeWatch(watch!)
        }, { watch, data in
            LoopGlue.from(data).toggleWatch(watch!)
        }, data, nil)
        dbus_connection_set_timeout_functions(connection, { timeout, data in
            LoopGlue.from(data).addTimeout(timeout!)
            return 1
        }, { timeout, data in
            LoopGlue.from(data).removeTimeout(timeout!)
        }, { timeout, data in
            LoopGlue.from(data).toggleTimeout(timeout!)
        }, data, nil)
        dbus_connection_set_dispatch_status_function(connection, { _, status, data in
            if status == DBUS_DISPATCH_DATA_REMAINS { LoopGlue.from(data).scheduleDispatch() }
        }, data, nil)
        dbus_connection_set_wakeup_main_function(connection, { data in
            LoopGlue.from(data).checkDispatch()
        }, data, nil)
        state.installed = true
        checkDispatch()
    }

    /// Removes every callback (libdbus calls the remove functions for live watches first).
    func uninstall() {
        guard state.installed else { return }
        state.installed = false
        dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
        dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
        dbus_connection_set_wakeup_main_function(connection, nil, nil, nil)
        for watch in watches.values { watch.cancel() }
        for timer in timeouts.values { timer.cancel() }
        watches = [:]
        timeouts = [:]
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> LoopGlue {
        Unmanaged<LoopGlue>.fromOpaque(data!).takeUnretainedValue()
    }

    // MARK: Watches

    private static func events(of watch: OpaquePointer) -> IOEvents {
        guard dbus_watch_get_enabled(watch) != 0 else { return [] }
        let flags = dbus_watch_get_flags(watch)
        var events: IOEvents = []
        if flags & DBUS_WATCH_READABLE.rawValue != 0 { events.insert(.readable) }
        if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events.insert(.writable) }
        return events
    }

    private func addWatch(_ watch: OpaquePointer) {
        let fd = dbus_watch_get_unix_fd(watch)
        watches[watch] = loop.watch(fd: fd, events: Self.events(of: watch)) { [unowned self] ready in
            var flags: UInt32 = 0
            if ready.contains(.readable) { flags |= DBUS_WATCH_READABLE.rawValue }
            if ready.contains(.writable) { flags |= DBUS_WATCH_WRITABLE.rawValue }
            if ready.contains(.hangup) { flags |= DBUS_WATCH_HANGUP.rawValue }
            if ready.contains(.error) { flags |= DBUS_WATCH_ERROR.rawValue }
            dbus_watch_handle(watch, flags)
            self.checkDispatch()
        }
    }

    private func removeWatch(_ watch: OpaquePointer) {
        watches.removeValue(forKey: watch)?.cancel()
    }

    private func toggleWatch(_ watch: OpaquePointer) {
        watches[watch]?.events = Self.events(of: watch)
    }

    // MARK: Timeouts

    private func addTimeout(_ timeout: OpaquePointer) {
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let interval = Duration.milliseconds(Int(dbus_timeout_get_interval(timeout)))
        timeouts[timeout] = loop.timer(after: interval, repeating: interval) { [unowned self] in
            dbus_timeout_handle(timeout)
            self.checkDispatch()
        }
    }

    private func removeTimeout(_ timeout: OpaquePointer) {
        timeouts.removeValue(forKey: timeout)?.cancel()
    }

    private func toggleTimeout(_ timeout: OpaquePointer) {
        removeTimeout(timeout)
        addTimeout(timeout)
    }

    // MARK: Dispatch

    func checkDispatch() {
        if !state.scheduled, dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS {
            scheduleDispatch()
        }
    }

    /// Dispatches at the end of this turn, after every ready descriptor has been read.
    func scheduleDispatch() {
        guard !state.scheduled, state.installed else { return }
        state.scheduled = true
        loop.afterIteration(dispatchJob)
    }
}
