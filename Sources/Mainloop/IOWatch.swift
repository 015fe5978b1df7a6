// SPDX-License-Identifier: MIT

/// A registration of interest in a file descriptor, returned by `EventLoop.watch`.
///
/// Several watches may share one descriptor (libdbus keeps separate read and write watches
/// on its socket); the loop registers the union of their interests with epoll. Setting
/// `events` to `[]` pauses the watch (the descriptor leaves the epoll set when no watch on
/// it has interest, so a hung-up peer cannot make the loop spin). Cancel the watch before
/// closing its descriptor. Lives on the loop's thread.
public final class IOWatch {
    /// The watched descriptor; the watch never closes it.
    public let fd: Int32
    let handler: (IOEvents) -> Void
    weak var loop: EventLoop?
    var interest: IOEvents

    /// Whether the watch is still registered (false after `cancel()`).
    public private(set) var isActive = true

    init(fd: Int32, events: IOEvents, loop: EventLoop, handler: @escaping (IOEvents) -> Void) {
        self.fd = fd
        self.interest = events.intersection([.readable, .writable])
        self.loop = loop
        self.handler = handler
    }

    /// The conditions this watch waits for; changing it takes effect before the loop sleeps
    /// again. Only `.readable` and `.writable` are meaningful here.
    public var events: IOEvents {
        get { interest }
        set {
            let wanted = newValue.intersection([.readable, .writable])
            guard isActive, wanted != interest else { return }
            interest = wanted
            loop?.updateInterest(fd: fd)
        }
    }

    /// Stops delivery; idempotent. The handler is not called after this returns.
    public func cancel() {
        guard isActive else { return }
        isActive = false
        loop?.remove(self)
    }
}
