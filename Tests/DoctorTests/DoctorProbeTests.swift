// SPDX-License-Identifier: MIT

import BLEModel
import ControlAPI
import DBusKit
import Testing

@testable import Doctor

@Suite("gattd --doctor: reading bluetoothd's command line")
struct DoctorProbeTests {
    @Test("a plain start is asked directly; a loader start with the loader's arguments")
    func versionCommands() {
        #expect(
            DoctorProbe.versionCommands(commandLine: ["/usr/libexec/bluetooth/bluetoothd", "-n"]) == [
                ["/usr/libexec/bluetooth/bluetoothd"]
            ])
        let loader = [
            "/opt/b/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "--library-path", "/opt/b/usr/lib",
            "/opt/b/usr/libexec/bluetooth/bluetoothd", "-n", "-f", "/etc/x.conf",
        ]
        #expect(
            DoctorProbe.versionCommands(commandLine: loader) == [Array(loader[...3]), [loader[0]]])
        #expect(DoctorProbe.versionCommands(commandLine: ["bluetoothd", "-n"]).isEmpty)
        #expect(DoctorProbe.versionCommands(commandLine: []).isEmpty)
    }

    @Test("bluetoothd's -f and --configfile name its main.conf")
    func configFile() {
        #expect(DoctorProbe.configFile(in: ["/b", "-n", "-f", "/etc/a.conf"]) == "/etc/a.conf")
        #expect(DoctorProbe.configFile(in: ["/b", "--configfile", "/etc/b.conf"]) == "/etc/b.conf")
        #expect(DoctorProbe.configFile(in: ["/b", "--configfile=/etc/c.conf"]) == "/etc/c.conf")
        #expect(DoctorProbe.configFile(in: ["/b", "-f/etc/d.conf"]) == "/etc/d.conf")
        #expect(DoctorProbe.configFile(in: ["/b", "-n", "-E"]) == nil)
        #expect(DoctorProbe.configFile(in: ["/b", "-f"]) == nil)
    }

    @Test("GATTD_KERNEL_RELEASE stands in for uname")
    func kernel() {
        #expect(DoctorProbe.kernelRelease(environment: ["GATTD_KERNEL_RELEASE": "6.12.93+rpt"])?.text == "6.12.93+rpt")
        #expect(DoctorProbe.kernelRelease(environment: [:])?.numbers.isEmpty == false)
    }

    @Test("gattd's refusals are read from Refusals, as bluetoothd gave them; the words are only shown")
    func refusalsAreData() {
        func refusal(_ subject: String, _ name: String, _ message: String) -> DBusValue {
            ControlKey.dictionary([
                (.subject, .string(subject)), (.errorName, .string(name)), (.message, .string(message)),
            ])
        }
        let status = ControlKey.dictionary([
            (.adapter, .string("hci0")), (.registered, .bool(false)),
            (.registration, .string("bluetoothd refused the application on hci0: Failed to create entry in database")),
            (
                .advertisements,
                .dictionary(
                    keySignature: "s", valueSignature: "s",
                    [
                        DBusDictionaryEntry(
                            key: .string("main"),
                            value: .string("refused: org.bluez.Error.Failed: Failed to register advertisement")),
                        DBusDictionaryEntry(key: .string("beacon"), value: .string("advertising")),
                    ])
            ),
            (.advertising, .stringArray(["beacon"])),
            (.lastError, .string("")),
            (
                .refusals,
                .array(
                    elementSignature: "a{sv}",
                    [
                        refusal("application", "org.bluez.Error.Failed", "Failed to create entry in database"),
                        refusal("advertisement", "org.bluez.Error.Failed", "Failed to register advertisement"),
                        refusal("a channel", "org.bluez.Error.Failed", "not a subject gattd reports"),
                    ])
            ),
        ])
        let channels = DBusValue.array(
            elementSignature: "a{sv}",
            [ControlKey.dictionary([(.id, .string("data")), (.error, .string("PSM 129 is taken"))])])
        let (state, refusals) = DoctorProbe.gattdState(status: status, channels: channels)
        #expect(
            refusals == [
                Refusal(subject: .application, errorName: "org.bluez.Error.Failed", message: "Failed to create entry in database"),
                Refusal(subject: .advertisement, errorName: "org.bluez.Error.Failed", message: "Failed to register advertisement"),
            ])
        #expect(state.adapter == "hci0")
        #expect(state.registered == false)
        #expect(state.advertisements.map(\.0) == ["main", "beacon"])
        #expect(state.advertising == ["beacon"])
        #expect(state.channelErrors.map(\.1) == ["PSM 129 is taken"])

        // The same words without Refusals: nothing is taken from the text.
        let wordsOnly = ControlKey.dictionary([
            (.registered, .bool(false)),
            (.registration, .string("bluetoothd refused the application on hci0: Failed to create entry in database")),
        ])
        #expect(DoctorProbe.gattdState(status: wordsOnly, channels: nil).refusals.isEmpty)
    }
}
