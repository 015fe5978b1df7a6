// SPDX-License-Identifier: MIT

import DaemonCore
import Testing

@Suite("Readiness: what systemd hears, and when")
struct ReadinessMachineTests {
    typealias Machine = ReadinessMachine

    /// A machine that has sent READY=1 at start.
    private func ready() -> Machine {
        var machine = Machine()
        _ = machine.settlementChanged(.settled)
        return machine
    }

    @Test("at start, STATUS= while the registrar looks; READY=1 once it has settled without an application")
    func readyWhenSettled() {
        var machine = Machine()
        #expect(machine.settlementChanged(.unsettled) == [.status])
        #expect(!machine.readySent)
        #expect(machine.settlementChanged(.settled) == [.ready(.current)])
        #expect(machine.readySent)
        // Afterwards every change is a STATUS=.
        #expect(machine.settlementChanged(.unsettled) == [.status])
        #expect(machine.settlementChanged(.registered(advertisementsSettled: true)) == [.status])
    }

    @Test("registered with advertisements unanswered: the wait is armed once, READY=1 cancels it")
    func advertisementsAnswered() {
        var machine = Machine()
        #expect(machine.settlementChanged(.registered(advertisementsSettled: false)) == [.armAdvertisementWait, .status])
        #expect(machine.settlementChanged(.registered(advertisementsSettled: false)) == [.status])
        #expect(
            machine.settlementChanged(.registered(advertisementsSettled: true)) == [
                .cancelAdvertisementWait, .ready(.current),
            ])
        // The timer's job, if it still ran, changes nothing.
        #expect(machine.advertisementWaitExpired(.registered(advertisementsSettled: false)) == [])
    }

    @Test("the wait expiring sends READY=1 without the advertisements; no STATUS= of its own")
    func advertisementWaitExpires() {
        var machine = Machine()
        _ = machine.settlementChanged(.registered(advertisementsSettled: false))
        #expect(machine.advertisementWaitExpired(.registered(advertisementsSettled: false)) == [.ready(.current)])
        #expect(machine.readySent)
    }

    @Test("the wait expiring while the registrar is unsettled: READY=1 later, without waiting again")
    func advertisementWaitExpiresUnsettled() {
        var machine = Machine()
        _ = machine.settlementChanged(.registered(advertisementsSettled: false))
        _ = machine.settlementChanged(.unsettled)
        #expect(machine.advertisementWaitExpired(.unsettled) == [])
        #expect(!machine.readySent)
        #expect(machine.settlementChanged(.registered(advertisementsSettled: false)) == [.ready(.current)])
    }

    @Test("a wait that expired is armed afresh for the next reload's registration")
    func waitResetsAfterReady() {
        var machine = Machine()
        _ = machine.settlementChanged(.registered(advertisementsSettled: false))
        _ = machine.advertisementWaitExpired(.registered(advertisementsSettled: false))
        #expect(machine.hangup() == [.reloading])
        #expect(machine.reloadAwaitsRegistration(.registered(advertisementsSettled: false)) == [.armAdvertisementWait])
    }

    @Test("a reload that applies in place: RELOADING=1, then READY=1 with the current status")
    func reloadInPlace() {
        var machine = ready()
        #expect(machine.hangup() == [.reloading])
        #expect(machine.reloading)
        #expect(machine.reloadFinished(status: .current) == [.ready(.current)])
        #expect(!machine.reloading)
    }

    @Test("a reload that fails says why in READY=1's status")
    func reloadFails() {
        var machine = ready()
        _ = machine.hangup()
        #expect(machine.reloadFinished(status: .text("reload failed")) == [.ready(.text("reload failed"))])
    }

    @Test("a reload that registers again: READY=1 once the registrar settles, STATUS= until then")
    func reloadRegistersAgain() {
        var machine = ready()
        _ = machine.hangup()
        #expect(machine.reloadAwaitsRegistration(.unsettled) == [])
        #expect(machine.settlementChanged(.unsettled) == [.status])
        #expect(machine.settlementChanged(.registered(advertisementsSettled: false)) == [.armAdvertisementWait, .status])
        #expect(
            machine.settlementChanged(.registered(advertisementsSettled: true)) == [
                .cancelAdvertisementWait, .ready(.current),
            ])
        #expect(!machine.reloading)
        #expect(machine.settlementChanged(.unsettled) == [.status])
    }

    @Test("a reload with nothing registered swaps at once: READY=1 right away")
    func reloadNothingRegistered() {
        var machine = ready()
        _ = machine.hangup()
        #expect(machine.reloadAwaitsRegistration(.settled) == [.ready(.current)])
        #expect(!machine.reloading)
    }

    @Test("SIGHUP during a reload: one more reload right after its READY=1, however many arrived")
    func hangupDuringReload() {
        var machine = ready()
        _ = machine.hangup()
        #expect(machine.hangup() == [])
        #expect(machine.hangup() == [])
        #expect(machine.reloadFinished(status: .current) == [.ready(.current), .reloadAgain])
        #expect(machine.hangup() == [.reloading])
        #expect(machine.reloadFinished(status: .current) == [.ready(.current)])
    }

    @Test("SIGHUP while the reload waits for the registrar: reload again after that READY=1")
    func hangupWhileAwaitingRegistration() {
        var machine = ready()
        _ = machine.hangup()
        _ = machine.reloadAwaitsRegistration(.unsettled)
        #expect(machine.hangup() == [])
        #expect(machine.settlementChanged(.settled) == [.ready(.current), .reloadAgain])
    }

    @Test("SIGTERM: STOPPING=1 once; SIGHUP afterwards is ignored")
    func terminate() {
        var machine = ready()
        #expect(machine.terminate() == [.stopping])
        #expect(machine.stopping)
        #expect(machine.terminate() == [])
        #expect(machine.hangup() == [])
    }

    @Test("a reload before the first READY=1: its READY=1 does not count as the start's")
    func reloadBeforeReady() {
        var machine = Machine()
        _ = machine.settlementChanged(.unsettled)
        _ = machine.hangup()
        #expect(machine.reloadFinished(status: .current) == [.ready(.current)])
        #expect(!machine.readySent)
        #expect(machine.settlementChanged(.settled) == [.ready(.current)])
    }
}
