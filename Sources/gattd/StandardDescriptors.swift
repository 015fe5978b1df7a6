// SPDX-License-Identifier: MIT

import Glibc

/// Descriptors 0, 1 and 2 open (on /dev/null) before anything else opens a file.
///
/// Started with them closed (a shell's `<&- >&- 2>&-`), the files gattd opens next take
/// those numbers: the D-Bus socket became one of them, the log was written into it, the bus
/// dropped the connection and gattd died of SIGPIPE before registering. systemd always
/// provides all three; a shell or a careless supervisor may not.
enum StandardDescriptors {
    static func ensureOpen() {
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            // open() returns the lowest free descriptor: this one.
            let opened = open("/dev/null", O_RDWR)
            if opened >= 0 && opened != descriptor { close(opened) }
        }
    }
}
