# SPDX-License-Identifier: MIT
"""Processes for the tests: a private dbus-daemon, the stand-in, gattd, any helper.

Every wait is on an event (a line on a pipe, a D-Bus reply) with a timeout.
Nothing here touches the host's system or session bus.
"""

import os
import select
import signal
import subprocess
import time

import dbus
import dbus.bus

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
STANDIN = os.path.join(HERE, "fake_bluetoothd.py")
CONTROL_NAME = "org.gattd.test.Standin"
CONTROL_PATH = "/org/gattd/test"
CONTROL_IFACE = "org.gattd.test.Standin1"
DEVICE = "/org/bluez/hci0/dev_00_11_22_33_44_55"
DEVICE2 = "/org/bluez/hci0/dev_66_77_88_99_AA_BB"


class LineReader:
    """Reads a child's pipe line by line, waiting with select() and a deadline."""

    def __init__(self, pipe, echo_to=None):
        self.fd = pipe.fileno()
        self.buf = b""
        self.lines = []
        self.echo_to = echo_to

    def wait_for(self, predicate, timeout):
        """Return the first line (old or new) for which predicate is true, or None."""
        for line in self.lines:
            if predicate(line):
                return line
        deadline = time.monotonic() + timeout
        while True:
            # Complete lines left over from the last read come first: a chunk can hold
            # several lines, and the call that read it may have returned at the first.
            line = self._next_buffered(predicate)
            if line is not None:
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return self._next_buffered(predicate)
            self.buf += chunk

    def _next_buffered(self, predicate):
        """Moves complete lines from the buffer to `lines`; the first matching one, or None."""
        while b"\n" in self.buf:
            raw, self.buf = self.buf.split(b"\n", 1)
            line = raw.decode(errors="replace")
            self.lines.append(line)
            if self.echo_to is not None:
                self.echo_to.write(line + "\n")
                self.echo_to.flush()
            if predicate(line):
                return line
        return None


class PrivateBus:
    """`dbus-daemon --session --nofork --print-address` in its own process group."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--print-address"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        line = LineReader(self.proc.stdout).wait_for(lambda l: l.startswith("unix:"), 10)
        if line is None:
            self.stop()
            raise RuntimeError("dbus-daemon did not print its address")
        self.address = line.strip()

    def connect(self):
        return dbus.bus.BusConnection(self.address)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)


class Standin:
    """The fake bluetoothd as a child process, with a blocking control proxy."""

    def __init__(self, bus, adapters="hci0", max_adverts=5, log_path=None):
        self.bus = bus
        self.adapters = adapters
        self.max_adverts = max_adverts
        self.log_path = log_path
        self.proc = None
        self.start()

    def start(self):
        self.stderr = open(self.log_path, "a") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [PYTHON, STANDIN, "--address", self.bus.address, "--adapters", self.adapters,
             "--max-adverts", str(self.max_adverts), "--verbose"],
            stdout=subprocess.PIPE, stderr=self.stderr, start_new_session=True)
        line = LineReader(self.proc.stdout).wait_for(lambda l: l.startswith("READY"), 15)
        if line is None:
            self.stop(signal.SIGKILL)
            raise RuntimeError("stand-in did not become ready")
        self.unique_name = line.split()[1]
        self.conn = self.bus.connect()
        self.control = dbus.Interface(self.conn.get_object(CONTROL_NAME, CONTROL_PATH, introspect=False),
                                      CONTROL_IFACE)

    def call(self, method, *args, timeout=20):
        """Blocking call of a Standin1 method; raises DBusException on error."""
        return getattr(self.control, method)(*args, timeout=timeout)

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        if self.stderr not in (None, subprocess.DEVNULL):
            self.stderr.close()

    def restart(self, sig=signal.SIGKILL):
        """bluetoothd restart: org.bluez vanishes, then comes back with a new owner."""
        self.stop(sig)
        self.start()


class Child:
    """Any helper process whose stdout the test reads line by line."""

    def __init__(self, argv, env_extra=None, log=None, cwd=None, closed_fds=()):
        env = dict(os.environ)
        env.update(env_extra or {})
        env["PYTHONUNBUFFERED"] = "1"

        def close_fds():  # the program starts with these closed, as a shell's `<&- >&- 2>&-` does
            for fd in closed_fds:
                os.close(fd)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, cwd=cwd, start_new_session=True,
                                     preexec_fn=close_fds if closed_fds else None)
        self.out = LineReader(self.proc.stdout, echo_to=log)

    def wait_for_line(self, text, timeout=10):
        return self.out.wait_for(lambda l: text in l, timeout)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def by_uuid(attributes, uuid):
    """The attribute dicts whose uuid matches (16-bit shorthand or full 128-bit)."""
    from bluez_rules import normalize_uuid
    full = normalize_uuid(uuid)
    return [a for a in attributes if str(a["uuid"]) == full]


def one_by_uuid(attributes, uuid):
    found = by_uuid(attributes, uuid)
    assert len(found) == 1, "expected one attribute with UUID %s, found %d" % (uuid, len(found))
    return found[0]
