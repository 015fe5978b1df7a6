# SPDX-License-Identifier: MIT
"""Processes for the tests: a private dbus-daemon, the stand-in, gattd, any helper.

Every wait is on an event (a line on a pipe, a D-Bus reply) with a timeout.
Nothing here touches the host's system or session bus.
"""

import os
import select
import signal
import subprocess
import threading
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
    """Reads a child's pipe line by line on a thread of its own, so a chatty child never
    blocks on a full pipe; `wait_for` waits for a matching line with a deadline."""

    def __init__(self, pipe, echo_to=None):
        self.pipe = pipe
        self.fd = pipe.fileno()
        self.lines = []
        self.echo_to = echo_to
        self.closed = False
        self.changed = threading.Condition()
        threading.Thread(target=self._read, name="LineReader-%d" % self.fd, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            if b"\n" not in buf:
                continue
            *complete, buf = buf.split(b"\n")
            lines = [raw.decode(errors="replace") for raw in complete]
            self._echo(lines)
            with self.changed:
                self.lines.extend(lines)
                self.changed.notify_all()
        self.pipe.close()       # the child is gone: hundreds of restarts must not run out of fds
        tail = [buf.decode(errors="replace")] if buf else []
        self._echo(tail)
        with self.changed:
            self.lines.extend(tail)
            self.closed = True
            self.changed.notify_all()

    def _echo(self, lines):
        if self.echo_to is None or not lines:
            return
        try:
            self.echo_to.write("".join(line + "\n" for line in lines))
            self.echo_to.flush()
        except ValueError:      # the log was closed: the test is over
            pass

    def wait_for(self, predicate, timeout, since=0):
        """Return the first line after the first `since` (old or new) for which predicate is
        true, or None."""
        deadline = time.monotonic() + timeout
        checked = since
        with self.changed:
            while True:
                for line in self.lines[checked:]:
                    if predicate(line):
                        return line
                checked = len(self.lines)
                remaining = deadline - time.monotonic()
                if self.closed or remaining <= 0:
                    return None
                self.changed.wait(remaining)


TCP_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>tcp:host=127.0.0.1,bind=127.0.0.1,port=0</listen>
  <auth>ANONYMOUS</auth>
  <allow_anonymous/>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class PrivateBus:
    """`dbus-daemon --session --nofork --print-address` in its own process group; with
    `tcp`, a bus on 127.0.0.1 instead of a Unix socket (it cannot pass file descriptors)."""

    def __init__(self, tcp=False):
        argv = ["dbus-daemon", "--session", "--nofork", "--print-address"]
        self.config = None
        if tcp:
            import tempfile
            fd, self.config = tempfile.mkstemp(suffix=".conf")
            with os.fdopen(fd, "w") as f:
                f.write(TCP_BUS_CONFIG)
            argv = ["dbus-daemon", "--config-file=" + self.config, "--nofork", "--print-address"]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        line = LineReader(self.proc.stdout).wait_for(lambda l: l.startswith(("unix:", "tcp:")), 10)
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
        if self.config:
            os.unlink(self.config)
            self.config = None


class Standin:
    """The fake bluetoothd as a child process, with a blocking control proxy."""

    def __init__(self, bus, adapters="hci0", max_adverts=5, log_path=None, emulate=None):
        self.bus = bus
        self.adapters = adapters
        self.max_adverts = max_adverts
        self.log_path = log_path
        self.emulate = emulate
        self.version_dir = None
        self.proc = None
        self.start()

    def version_program(self):
        """An executable named bluetoothd that answers --version as the emulated release does;
        the stand-in runs with it as argv[0], where gattd --doctor looks (/proc/PID/cmdline)."""
        import tempfile
        from emulation import PROFILES
        if self.version_dir is None:
            self.version_dir = tempfile.mkdtemp(prefix="standin-version-")
        program = os.path.join(self.version_dir, "bluetoothd")
        with open(program, "w") as f:
            f.write("#!/bin/sh\n[ \"$1\" = --version ] || exit 2\necho %s\n" % PROFILES[self.emulate]["version"])
        os.chmod(program, 0o755)
        return program

    def start(self):
        self.stderr = open(self.log_path, "a") if self.log_path else subprocess.DEVNULL
        argv = [PYTHON, STANDIN, "--address", self.bus.address, "--adapters", self.adapters,
                "--max-adverts", str(self.max_adverts), "--verbose"]
        executable = None
        if self.emulate is not None:
            argv += ["--emulate", self.emulate]
            argv[0], executable = self.version_program(), PYTHON
        self.proc = subprocess.Popen(
            argv, executable=executable, stdout=subprocess.PIPE, stderr=self.stderr, start_new_session=True)
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
        if self.version_dir is not None:
            import shutil
            shutil.rmtree(self.version_dir, ignore_errors=True)
            self.version_dir = None

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
