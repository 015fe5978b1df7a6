// SPDX-License-Identifier: MIT

public import BLEModel
public import Logging
public import Mainloop

/// Runs the timed updates (`update`) of every characteristic.
///
/// A characteristic's timer runs while it has a subscriber (bluetoothd's StartNotify to
/// StopNotify), or always with `whileUnsubscribed`. Nothing else is scheduled: with no
/// subscriber and no `whileUnsubscribed`, no timer exists and the loop sleeps. Lives on
/// the loop thread.
public final class UpdateScheduler {
    /// By characteristic id.
    public private(set) var updaters: [String: ValueUpdater] = [:]
    private let database: AttributeDatabase
    private let timers: UpdateTimers
    private var started = false

    /// The characteristics of `database`, each value set in it, and the room in a
    /// notification queue asked of `notifier`: the pieces of one `Runtime` (`RuntimeFactory`
    /// builds them together), which the `RequestService` serves by the time the timers
    /// start. `makeSource` builds the source of each characteristic with an `update`
    /// (the daemon's: `daemonSources`).
    public init(
        configuration: Configuration, database: AttributeDatabase, notifier: Notifier, timers: UpdateTimers,
        logger: Logger, makeSource: (String, UpdateSource) -> any ValueSource
    ) {
        self.database = database
        self.timers = timers
        for characteristic in configuration.services.flatMap(\.characteristics) {
            guard let update = characteristic.update, let attribute = database[characteristic.id] else { continue }
            let updater = ValueUpdater(
                attribute: attribute, definition: update, source: makeSource(characteristic.id, update.source),
                database: database, notifier: notifier, logger: logger)
            updaters[characteristic.id] = updater
        }
        database.observeSubscriptions { [weak self] attribute in self?.subscriptionChanged(attribute) }
    }

    /// The daemon's sources: counters resume from and record to `persistence`, random
    /// sources are seeded from the kernel, commands run on `loop`.
    public static func daemonSources(_ loop: EventLoop, _ persistence: Persistence?) -> (String, UpdateSource) -> any ValueSource {
        { id, source in
            switch source {
            case .counter(let start, let step, let min, let max):
                return CounterSource(
                    start: start, step: step, min: min, max: max, resumeFrom: persistence?.savedCounter(id: id),
                    record: persistence?.counterRecorder(id: id) ?? { _ in })
            case .random(let min, let max, let integer):
                return RandomSource(min: min, max: max, integer: integer)
            case .file(let path, let format, let scale, let offset):
                return FileSource(path: path, format: format, scale: scale, offset: offset)
            case .command(let argv, let timeoutMs, let format):
                return CommandSource(argv: argv, timeout: .milliseconds(timeoutMs), format: format, loop: loop)
            }
        }
    }

    /// Starts the timers that should run now (`whileUnsubscribed` ones, subscribed ones).
    public func start() {
        started = true
        for updater in updaters.values where updater.wantsToRun { updater.start(timers) }
    }

    /// Stops every timer (shutdown); readings under way are cancelled.
    public func stop() {
        started = false
        for updater in updaters.values {
            updater.stop()
            updater.source.cancel()
        }
    }

    /// Timers currently running.
    public var runningCount: Int { updaters.values.filter(\.isRunning).count }

    private func subscriptionChanged(_ attribute: Attribute) {
        guard started, let updater = updaters[attribute.id] else { return }
        if updater.wantsToRun {
            updater.start(timers)
        } else {
            updater.stop()
        }
    }
}
