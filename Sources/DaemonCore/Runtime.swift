// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging
public import Mainloop

/// Everything that serves one configuration: the attribute database, its persistence,
/// the notification path, the `onWrite` hooks and the value sources. `RuntimeFactory`
/// builds one at start and a new one on each reload that rebuilds the GATT tree; the
/// `RequestService` holds the one it serves (`RequestService.runtime`, replaced by
/// `serve(_:)`).
public final class Runtime {
    public let database: AttributeDatabase
    /// Nil: nothing is saved, and writes do not wait for the disk.
    public let persistence: Persistence?
    public let notifier: Notifier
    public let writeHooks: WriteHookRunner
    /// The timed updates (`update`), each setting its value through the service.
    public let updates: UpdateScheduler

    init(
        database: AttributeDatabase, persistence: Persistence?, notifier: Notifier, writeHooks: WriteHookRunner,
        updates: UpdateScheduler
    ) {
        self.database = database
        self.persistence = persistence
        self.notifier = notifier
        self.writeHooks = writeHooks
        self.updates = updates
    }

    /// Starts the value sources' timers (those that should run now).
    public func start() { updates.start() }

    /// Stops the value sources; readings under way are cancelled.
    public func stop() { updates.stop() }
}

/// Builds the `Runtime` of a configuration, the same way in the daemon and in the test
/// fixtures: a new characteristic key that needs a piece at run time is wired here.
public struct RuntimeFactory {
    /// Where the state is kept.
    public enum StateKeeping {
        /// Nothing is saved or restored.
        case none
        /// `StateStore` in this directory, created if missing; the first runtime restores it.
        case directory(String)
        /// This storage; the first runtime restores `saved`, if given.
        case storage(any StateStorage, saved: StateLoadResult?)
    }

    public let loop: EventLoop
    public let state: StateKeeping
    /// Where the runtime gets time from: the loop's, or a test's (`RuntimeScheduling`).
    public let scheduling: RuntimeScheduling
    /// Paces notifications.
    public var clock: LoopClock { scheduling.clock }
    /// The value sources' timers.
    public var timers: UpdateTimers { scheduling.timers }
    /// Learns the MTU from centrals' requests; one for the daemon's life, so it carries over.
    public let mtu: MTUTracker
    /// Where the value sources come from, given the runtime's loop and persistence: the
    /// daemon's (`UpdateScheduler.daemonSources`), or a test's own sources.
    public let sources: Sources
    public let logger: Logger

    /// Makes, for a runtime's loop and persistence, the source of each characteristic with
    /// an `update` (by its id).
    public typealias Sources = (EventLoop, Persistence?) -> (String, UpdateSource) -> any ValueSource

    public init(
        loop: EventLoop, state: StateKeeping, scheduling: RuntimeScheduling? = nil, mtu: MTUTracker = MTUTracker(),
        sources: @escaping Sources = UpdateScheduler.daemonSources, logger: Logger
    ) {
        self.loop = loop
        self.state = state
        self.scheduling = scheduling ?? .loop(loop)
        self.mtu = mtu
        self.sources = sources
        self.logger = logger
    }

    /// The first runtime, with the saved state restored before anything is exported (so
    /// the first read after a restart returns the last acknowledged value), and the
    /// service that serves it (`service.runtime` is that runtime). Its value sources are
    /// not started (`Runtime.start`).
    public func makeService(_ configuration: Configuration) -> (service: RequestService, runtime: Runtime) {
        let runtime = build(configuration, after: nil)
        return (RequestService(runtime: runtime, mtu: mtu, logger: logger), runtime)
    }

    /// The runtime of a reloaded configuration that rebuilds the tree, carrying over from
    /// `previous`: written values that still fit (the others are logged and dropped), what
    /// its persistence kept (`Persistence.carryOver(from:)`: handles, counters,
    /// advertisement states and data), and the `onWrite` programs still running. Not yet
    /// served: `service.serve(runtime)`, then `previous.stop()` and `runtime.start()`.
    public func make(_ configuration: Configuration, after previous: Runtime) -> Runtime {
        build(configuration, after: previous)
    }

    /// The one builder: the runtime of `configuration`, either the first (`previous` nil:
    /// the saved state, if any, restored into it) or the one after `previous` (its values,
    /// its persistence's records and its running `onWrite` programs carried over).
    private func build(_ configuration: Configuration, after previous: Runtime?) -> Runtime {
        let database = AttributeDatabase(configuration: configuration)
        if let previous {
            for drop in database.carryOver(from: previous.database) {
                logger.warning(
                    "a written value does not fit the new configuration",
                    metadata: ["gatt.id": "\(drop.id)", "reason": "\(drop.reason)"])
            }
        }
        let persistence = makePersistence(configuration, database)
        if let persistence {
            if let previous {
                if let old = previous.persistence { persistence.carryOver(from: old) }
            } else if let saved = savedState() {
                persistence.restore(from: saved)
            }
        }
        let notifier = Notifier(configuration: configuration, database: database, clock: clock, mtu: mtu, logger: logger)
        let programs = previous?.writeHooks.programs ?? WriteHookRunner.Programs()
        let writeHooks = WriteHookRunner(configuration: configuration, loop: loop, logger: logger, programs: programs)
        return Runtime(
            database: database, persistence: persistence, notifier: notifier,
            writeHooks: writeHooks, updates: makeUpdates(configuration, database, persistence, notifier))
    }

    /// What the first runtime restores: the state directory's document, or the storage's
    /// `saved`; nil when nothing is kept.
    private func savedState() -> StateLoadResult? {
        switch state {
        case .none: nil
        case .directory(let directory): StateStore(directory: directory).load()
        case .storage(_, let saved): saved
        }
    }

    /// The persistence of `database`, its later saves on `scheduling.persistence`; nil when
    /// nothing is kept.
    private func makePersistence(_ configuration: Configuration, _ database: AttributeDatabase) -> Persistence? {
        let storage: any StateStorage
        var statePath: String?
        switch state {
        case .none:
            return nil
        case .storage(let given, _):
            storage = given
        case .directory(let directory):
            let store = StateStore(directory: directory)
            do throws(StateStoreError) {
                try store.prepareDirectory()
            } catch {
                logger.error(
                    "cannot create the state directory; writes to persistent values will be refused",
                    metadata: ["error": "\(error)"])
            }
            storage = store
            statePath = store.path
        }
        let persistence = Persistence(
            configuration: configuration, database: database, storage: storage, scheduling: scheduling.persistence,
            logger: logger)
        if let statePath { logger.info("state", metadata: ["path": "\(statePath)"]) }
        return persistence
    }

    /// The value sources of `configuration`, made by `sources` (the daemon's: counters resume
    /// from and record to `persistence`); every value is set in `database`, and the room in
    /// a notification queue is asked of `notifier`.
    private func makeUpdates(
        _ configuration: Configuration, _ database: AttributeDatabase, _ persistence: Persistence?,
        _ notifier: Notifier
    ) -> UpdateScheduler {
        UpdateScheduler(
            configuration: configuration, database: database, notifier: notifier, timers: timers, logger: logger,
            makeSource: sources(loop, persistence))
    }
}

extension PersistenceScheduling {
    /// Delayed saves on `loop`'s timers, after-iteration flushes on `loop`.
    public static func loop(_ loop: EventLoop) -> PersistenceScheduling {
        // Persistence keeps at most one delayed save pending; its timer lives here.
        let pending = TimerSlot()
        return PersistenceScheduling(
            afterIteration: { loop.afterIteration($0) },
            after: { delay, job in pending.timer = loop.timer(after: delay, job) })
    }
}

/// Holds the one pending delayed-save timer of `Persistence`.
private final class TimerSlot {
    var timer: LoopTimer?
}
