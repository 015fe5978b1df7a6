// SPDX-License-Identifier: MIT

import BLEModel
import DaemonCore
import TestSupport
import Testing

@Suite("Numeric comparison: pending confirmations and their decisions")
struct PendingConfirmationsTests {
    let clock = ManualScheduler()
    let desk: PendingConfirmations
    static let first = PendingConfirmations.Pending(
        device: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01", address: "AA:BB:CC:DD:EE:01", passkey: "004321")
    static let second = PendingConfirmations.Pending(
        device: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_02", address: "AA:BB:CC:DD:EE:02", passkey: "999999")

    init() {
        desk = PendingConfirmations(timeout: .seconds(20), clock: clock.clock)
    }

    /// Begins `pending`; the decisions it gets are appended to the returned box.
    final class Answers {
        var decisions: [PendingConfirmations.Decision] = []
    }

    func begin(_ pending: PendingConfirmations.Pending) -> (Bool, Answers) {
        let answers = Answers()
        let started = desk.begin(pending) { answers.decisions.append($0) }
        return (started, answers)
    }

    @Test("confirm accepts the pending pairing once, and stops its timer")
    func accept() {
        let (started, answers) = begin(Self.first)
        #expect(started && clock.pendingCount == 1)
        #expect(desk.decide(address: Self.first.address, .accept(by: "tester")) == .success(Self.first))
        #expect(answers.decisions == [.accept(by: "tester")])
        #expect(clock.pendingCount == 0 && desk.pending.isEmpty)
        clock.advance(by: .seconds(30))
        #expect(answers.decisions.count == 1)
    }

    @Test("reject rejects with the reason given")
    func reject() {
        let (_, answers) = begin(Self.first)
        #expect(desk.decide(address: nil, .reject(because: "rejected by tester")) == .success(Self.first))
        #expect(answers.decisions == [.reject(because: "rejected by tester")])
        #expect(!answers.decisions[0].accepted)
    }

    @Test("nobody decides: rejected when the time is up, not a moment before (fail closed)")
    func timeout() {
        let (_, answers) = begin(Self.first)
        clock.advance(by: .milliseconds(19_999))
        #expect(answers.decisions.isEmpty && desk.pending == [Self.first])
        clock.advance(by: .milliseconds(1))
        #expect(answers.decisions == [.reject(because: "nobody confirmed within 20 s (confirmSeconds)")])
        #expect(desk.pending.isEmpty)
        // A confirm that comes too late finds nothing.
        #expect(desk.decide(address: Self.first.address, .accept(by: "late")) == .failure(.nothingPending(address: Self.first.address)))
        #expect(answers.decisions.count == 1)
    }

    @Test("a second request for the same central is refused; the first keeps waiting")
    func secondForSameCentral() {
        let (first, firstAnswers) = begin(Self.first)
        let (again, againAnswers) = begin(
            PendingConfirmations.Pending(device: Self.first.device, address: Self.first.address, passkey: "111111"))
        #expect(first && !again)
        #expect(desk.pending == [Self.first] && clock.pendingCount == 1)
        #expect(desk.decide(address: Self.first.address, .accept(by: "tester")) == .success(Self.first))
        #expect(firstAnswers.decisions == [.accept(by: "tester")] && againAnswers.decisions.isEmpty)
    }

    @Test("confirm with nothing pending is an error naming the address; no address and nothing pending too")
    func nothingPending() {
        #expect(desk.decide(address: "AA:BB:CC:DD:EE:09", .accept(by: "x")) == .failure(.nothingPending(address: "AA:BB:CC:DD:EE:09")))
        #expect(PendingConfirmations.Refusal.nothingPending(address: "AA:BB:CC:DD:EE:09").message
            == "no pairing confirmation is pending for AA:BB:CC:DD:EE:09")
        #expect(desk.decide(address: nil, .accept(by: "x")) == .failure(.nothingPending(address: nil)))
        let (_, answers) = begin(Self.first)
        #expect(desk.decide(address: Self.second.address, .accept(by: "x")) == .failure(.nothingPending(address: Self.second.address)))
        #expect(answers.decisions.isEmpty)
    }

    @Test("two centrals waiting: each decided by its address; no address is ambiguous")
    func twoCentrals() {
        let (_, one) = begin(Self.first)
        let (_, two) = begin(Self.second)
        #expect(desk.decide(address: nil, .accept(by: "x")) == .failure(.ambiguous(addresses: [Self.first.address, Self.second.address])))
        #expect(desk.decide(address: Self.second.address, .reject(because: "no")) == .success(Self.second))
        #expect(one.decisions.isEmpty && two.decisions == [.reject(because: "no")])
        #expect(desk.decide(address: nil, .accept(by: "x")) == .success(Self.first))
    }

    @Test("cancelAll rejects everything waiting with the reason")
    func cancelAll() {
        let (_, one) = begin(Self.first)
        let (_, two) = begin(Self.second)
        desk.cancelAll(because: "bluetoothd cancelled the request")
        #expect(one.decisions == [.reject(because: "bluetoothd cancelled the request")])
        #expect(two.decisions == one.decisions && clock.pendingCount == 0)
    }

    @Test("the onConfirm program's exit status 0 accepts; any other end rejects")
    func programOutcomes() {
        #expect(PairingPolicy.confirmation(by: .exited(0)) == .accept(by: "the onConfirm program"))
        #expect(PairingPolicy.confirmation(by: .exited(1)) == .reject(because: "the onConfirm program did not accept (exit status 1)"))
        #expect(!PairingPolicy.confirmation(by: .exited(255)).accepted)
        #expect(!PairingPolicy.confirmation(by: .signaled(9)).accepted)
        #expect(PairingPolicy.confirmation(by: .timedOut) == .reject(because: "the onConfirm program did not accept (timed out)"))
    }

    @Test("the onConfirm program gets the digits, the address and the path; killed at the decision's timeout")
    func confirmLaunch() {
        let definition = SecurityDefinition(
            pairing: .numericComparison, onConfirm: .init(argv: ["ask", "--yes-no"]), confirmSeconds: 12)
        let launch = PairingPolicy(definition).confirmLaunch(
            passkey: "004321", address: Self.first.address, devicePath: Self.first.device)
        #expect(
            launch
                == PairingPolicy.PasskeyLaunch(
                    argv: ["ask", "--yes-no"],
                    environment: [
                        "GATTD_PASSKEY": "004321", "GATTD_DEVICE": Self.first.address, "GATTD_DEVICE_PATH": Self.first.device,
                    ],
                    timeout: .seconds(12)))
        #expect(
            PairingPolicy(SecurityDefinition(pairing: .numericComparison)).confirmLaunch(
                passkey: "1", address: "", devicePath: "") == nil)
    }
}
