// SPDX-License-Identifier: MIT

/// What gattd tells systemd, and when: READY=1 once it knows where it stands, RELOADING=1
/// and READY=1 around a reload, STATUS= in between, STOPPING=1 once. Pure: events in,
/// actions out; the daemon performs the actions (sd_notify, the advertisement timer, the
/// reload itself) and feeds back what happened. Nothing here reads a clock or the bus.
///
/// - READY=1 at start waits until the registrar has settled and, when the application is
///   registered, every enabled advertisement has been accepted or refused; that second
///   wait is bounded by a timer the machine asks for once (`armAdvertisementWait`).
/// - A reload sends RELOADING=1; it ends with READY=1 at once (an invalid file, or
///   nothing to register again), or, when it re-registers the application, once settled
///   as at start. A SIGHUP during a reload starts another one right after (`reloadAgain`).
/// - SIGTERM sends STOPPING=1 once; a second one is ignored, and so is a SIGHUP after it.
public struct ReadinessMachine: Sendable {
    /// Where the registrar (and the advertiser) stand, as readiness needs it.
    public enum Registration: Equatable, Sendable {
        /// Still finding out: starting, looking for an adapter, registering.
        case unsettled
        /// Settled without a registered application (no bluetoothd, no adapter, failed).
        case settled
        /// The application is registered; the advertisements have all been answered or not.
        case registered(advertisementsSettled: Bool)
    }

    /// The text READY=1 carries.
    public enum Status: Equatable, Sendable {
        /// The daemon's own summary of the registrar's current state.
        case current
        /// This text (a reload that failed says why).
        case text(String)
    }

    public enum Action: Equatable, Sendable {
        /// sd_notify READY=1 with STATUS=; cancels the advertisement wait if armed.
        case ready(Status)
        /// sd_notify STATUS= with the current summary.
        case status
        /// sd_notify RELOADING=1, then read the configuration again and apply it.
        case reloading
        /// sd_notify STOPPING=1, then unregister and leave the loop.
        case stopping
        /// Start the timer that bounds the wait for the advertisements' answers; when it
        /// fires, feed `advertisementWaitExpired`.
        case armAdvertisementWait
        /// Cancel that timer (READY=1 went out before it fired).
        case cancelAdvertisementWait
        /// A SIGHUP arrived during the reload just finished: reload once more.
        case reloadAgain
    }

    private enum Reload: Equatable {
        case idle
        /// Reading and applying the file; `again`: a SIGHUP arrived meanwhile.
        case applying(again: Bool)
        /// The application is being registered again: READY=1 once settled.
        case awaitingRegistration(again: Bool)

        var again: Bool {
            switch self {
            case .idle: false
            case .applying(let again), .awaitingRegistration(let again): again
            }
        }
    }

    private enum AdvertisementWait: Equatable {
        case idle
        case armed
        /// Fired: stop waiting for the advertisements' answers.
        case expired
    }

    /// READY=1 has gone out once (at start).
    public private(set) var readySent = false
    /// SIGTERM arrived.
    public private(set) var stopping = false
    private var reload = Reload.idle
    private var advertisementWait = AdvertisementWait.idle

    public init() {}

    /// A reload is under way (RELOADING=1 sent, its READY=1 not yet).
    public var reloading: Bool { reload != .idle }

    /// The registrar's state changed, or the advertisements all got their answers:
    /// READY=1 if that is what was awaited, else STATUS=.
    public mutating func settlementChanged(_ registration: Registration) -> [Action] {
        let (sent, actions) = readyIfSettled(registration)
        return sent ? actions : actions + [.status]
    }

    /// The advertisement wait fired: READY=1 if the registrar is settled, without waiting
    /// for the advertisements any longer.
    public mutating func advertisementWaitExpired(_ registration: Registration) -> [Action] {
        guard advertisementWait == .armed else { return [] }
        advertisementWait = .expired
        return readyIfSettled(registration).actions
    }

    /// SIGHUP: RELOADING=1 and reload, unless stopping; during a reload, once more after it.
    public mutating func hangup() -> [Action] {
        guard !stopping else { return [] }
        guard reload == .idle else {
            if case .awaitingRegistration = reload {
                reload = .awaitingRegistration(again: true)
            } else {
                reload = .applying(again: true)
            }
            return []
        }
        reload = .applying(again: false)
        return [.reloading]
    }

    /// The reload is done without registering again (an invalid file, or changes applied
    /// in place): READY=1 with `status`.
    public mutating func reloadFinished(status: Status) -> [Action] {
        let again = reload.again
        reload = .idle
        return [.ready(status)] + (again ? [.reloadAgain] : [])
    }

    /// The reload registers the application again: READY=1 once settled (at once when
    /// nothing was registered and the tree was swapped already).
    public mutating func reloadAwaitsRegistration(_ registration: Registration) -> [Action] {
        reload = .awaitingRegistration(again: reload.again)
        return readyIfSettled(registration).actions
    }

    /// SIGTERM or SIGINT: STOPPING=1, once.
    public mutating func terminate() -> [Action] {
        guard !stopping else { return [] }
        stopping = true
        return [.stopping]
    }

    /// READY=1 when awaited and settled (`sent`); when not, the advertisement wait is
    /// armed if the advertisements are what is missing and it was not armed before.
    private mutating func readyIfSettled(_ registration: Registration) -> (sent: Bool, actions: [Action]) {
        let awaitingReload: Bool
        if case .awaitingRegistration = reload { awaitingReload = true } else { awaitingReload = false }
        guard !readySent || awaitingReload else { return (false, []) }
        switch registration {
        case .unsettled:
            return (false, [])
        case .registered(advertisementsSettled: false) where advertisementWait != .expired:
            guard advertisementWait == .idle else { return (false, []) }
            advertisementWait = .armed
            return (false, [.armAdvertisementWait])
        case .settled, .registered:
            break
        }
        var actions: [Action] = advertisementWait == .armed ? [.cancelAdvertisementWait] : []
        advertisementWait = .idle
        readySent = true
        if awaitingReload {
            actions += reloadFinished(status: .current)
        } else {
            actions.append(.ready(.current))
        }
        return (true, actions)
    }
}
