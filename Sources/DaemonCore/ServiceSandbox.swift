// SPDX-License-Identifier: MIT

public import BLEModel
import Glibc

/// What the programs and files a definition names look like from inside gattd's service
/// (systemd/gattd.service): `ProtectHome=yes` hides /home, /root and /run/user,
/// `PrivateTmp=yes` gives the service a /tmp of its own, `PrivateDevices=yes` leaves only
/// pseudo-devices in /dev, `ProcSubset=pid` only the process directories in /proc, and
/// programs run as user `gattd`. `gattd --check` warns about each (the file is fine as
/// JSON; it would fail only at run time, in the journal).
public enum ServiceSandbox {
    /// Warnings for the hooks (`onWrite`), command sources and file sources of `configuration`.
    public static func warnings(for configuration: Configuration) -> [ConfigurationIssue] {
        var issues: [ConfigurationIssue] = []
        for characteristic in configuration.services.flatMap(\.characteristics) {
            let path = characteristic.sourcePath
            if let hook = characteristic.onWrite, let program = hook.argv.first {
                issues += programProblems(program).map { warning(path + ".onWrite", "hook " + $0) }
            }
            switch characteristic.update?.source {
            case .command(let argv, _, _)?:
                if let program = argv.first {
                    issues += programProblems(program).map { warning(path + ".update.source", "command " + $0) }
                }
            case .file(let file, _, _, _)?:
                if let reason = hiddenReason(file) {
                    issues.append(warning(path + ".update.source", "file \(file) \(reason)"))
                }
            default:
                break
            }
        }
        return issues
    }

    private static func warning(_ path: String, _ message: String) -> ConfigurationIssue {
        ConfigurationIssue(path: path, message: message, severity: .warning)
    }

    /// Why the service cannot see `path`, or nil.
    static func hiddenReason(_ path: String) -> String? {
        for prefix in ["/home/", "/root/", "/run/user/"] where path.hasPrefix(prefix) {
            return "is hidden from the service (ProtectHome=yes in gattd.service); put it under /usr/local or /opt"
        }
        for prefix in ["/tmp/", "/var/tmp/"] where path.hasPrefix(prefix) {
            return "is not what the service sees (PrivateTmp=yes in gattd.service gives it a /tmp of its own); "
                + "put it under /usr/local, /opt or /run"
        }
        if path.hasPrefix("/dev/"),
            !["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"].contains(path)
        {
            return "is hidden from the service (PrivateDevices=yes in gattd.service); read it from a program "
                + "outside the service and publish with gattctl set"
        }
        if path.hasPrefix("/proc/") {
            let first = path.dropFirst("/proc/".count).prefix { $0 != "/" }
            if !(first.allSatisfy(\.isNumber) || first == "self" || first == "thread-self") {
                return "is hidden from the service (ProcSubset=pid in gattd.service shows only process directories)"
            }
        }
        return nil
    }

    /// What keeps the service from running `program` (an absolute path; a bare name is
    /// looked up on the service's PATH and not checked here).
    static func programProblems(_ program: String) -> [String] {
        guard program.hasPrefix("/") else { return [] }
        if let reason = hiddenReason(program) { return ["\(program) \(reason)"] }
        return fileProblems(program)
    }

    /// Whether user `gattd` can run the file at `program`, wherever it is.
    static func fileProblems(_ program: String) -> [String] {
        var info = stat()
        guard stat(program, &info) == 0 else {
            return ["\(program) does not exist (\(String(cString: strerror(errno))))"]
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return ["\(program) is not a regular file"] }
        let mode = info.st_mode & 0o777
        if mode & 0o111 == 0 {
            return ["\(program) is not executable (chmod +x \(program))"]
        }
        if mode & 0o001 == 0 {
            let group = getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) }
            let ownerIsGattd = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } == "gattd"
            if !ownerIsGattd && !(group == "gattd" && mode & 0o010 != 0) {
                return [
                    "\(program) is not executable by user gattd, which the service runs it as "
                        + "(chmod o+x, or group gattd with g+x)"
                ]
            }
        }
        return []
    }
}
