// SPDX-License-Identifier: MIT

import BLEModel
@testable import DaemonCore
import Foundation
import Testing

/// `gattd --check` on programs and files the service's sandbox hides or cannot run.
@Suite("What the service can see and run")
struct ServiceSandboxTests {
    @Test("paths the unit hides: ProtectHome, PrivateTmp, PrivateDevices, ProcSubset=pid")
    func hidden() {
        #expect(ServiceSandbox.hiddenReason("/home/pi/hook.sh")?.contains("ProtectHome=yes") == true)
        #expect(ServiceSandbox.hiddenReason("/root/hook.sh")?.contains("ProtectHome=yes") == true)
        #expect(ServiceSandbox.hiddenReason("/tmp/value")?.contains("PrivateTmp=yes") == true)
        #expect(ServiceSandbox.hiddenReason("/dev/ttyUSB0")?.contains("PrivateDevices=yes") == true)
        #expect(ServiceSandbox.hiddenReason("/proc/loadavg")?.contains("ProcSubset=pid") == true)
        #expect(ServiceSandbox.hiddenReason("/proc/self/status") == nil)
        #expect(ServiceSandbox.hiddenReason("/dev/urandom") == nil)
        #expect(ServiceSandbox.hiddenReason("/sys/class/thermal/thermal_zone0/temp") == nil)
        #expect(ServiceSandbox.hiddenReason("/usr/local/bin/hook") == nil)
    }

    @Test("a program that is missing, not executable, or executable by its owner only")
    func programs() throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let runnable = try scratch.script("ok.sh", "exit 0")
        #expect(ServiceSandbox.fileProblems(runnable) == [])
        let plain = try scratch.file("plain.sh", "#!/bin/sh\n")
        #expect(ServiceSandbox.fileProblems(plain) == ["\(plain) is not executable (chmod +x \(plain))"])
        let ownerOnly = try scratch.script("mine.sh", "exit 0")
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: ownerOnly)
        #expect(ServiceSandbox.fileProblems(ownerOnly).first?.contains("not executable by user gattd") == true)
        #expect(ServiceSandbox.fileProblems(scratch.path + "/absent").first?.contains("does not exist") == true)
        #expect(ServiceSandbox.fileProblems(scratch.path).first?.contains("not a regular file") == true)
    }

    @Test("warnings name the hook, command or file source, at its path")
    func warnings() throws {
        let text = """
            {"version": 1, "services": [{"id": "s", "uuid": "181A", "characteristics": [
              {"id": "a", "uuid": "2A6E", "flags": ["read", "write"], "onWrite": {"argv": ["/home/pi/hook.sh"]}},
              {"id": "b", "uuid": "2A6F", "flags": ["read", "notify"],
               "update": {"everyMs": 1000, "source": {"file": {"path": "/proc/loadavg"}}}},
              {"id": "c", "uuid": "2A70", "flags": ["notify"],
               "update": {"everyMs": 1000, "source": {"command": {"argv": ["date", "+%s"]}}}},
              {"id": "d", "uuid": "2A71", "flags": ["write"], "onWrite": {"argv": ["/bin/true"]}}
            ]}]}
            """
        let configuration = try ConfigurationLoader.parse(Array(text.utf8)).get().configuration
        let issues = ServiceSandbox.warnings(for: configuration)
        #expect(issues.map(\.path) == ["services[0].characteristics[0].onWrite", "services[0].characteristics[1].update.source"])
        #expect(issues.allSatisfy { $0.severity == .warning })
        #expect(issues[0].message.hasPrefix("hook /home/pi/hook.sh is hidden from the service (ProtectHome=yes"))
        #expect(issues[1].message.hasPrefix("file /proc/loadavg is hidden from the service (ProcSubset=pid"))
    }
}
