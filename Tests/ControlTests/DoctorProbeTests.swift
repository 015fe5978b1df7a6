// SPDX-License-Identifier: MIT

import BLEModel
import Testing

@testable import Control

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
}
