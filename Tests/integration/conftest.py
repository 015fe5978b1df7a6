# SPDX-License-Identifier: MIT
"""Fixtures for gattd's integration suite: private bus, stand-in bluetoothd, gattd.

gattd comes from $GATTD_BIN and gattctl from $GATTCTL_BIN (default: the gattctl next to
$GATTD_BIN): every test finds the binaries through gattd_binary() and gattctl_binary()
here, and a test fails, never skips, when one is missing. gattd runs as `gattd --config <file>` with DBUS_SYSTEM_BUS_ADDRESS pointing at the
private bus and STATE_DIRECTORY at a directory of the test's own (so no test sees
another's saved values; restarts within one test share it). Its output goes to a file that is printed when a test fails.
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "Tests", "standin"))

from harness import Child  # noqa: E402
from fixtures import print_on_failure, private_bus, pytest_runtest_makereport, standin  # noqa: E402,F401
from notify_socket import NotifySocket  # noqa: E402

CONFIGS = os.path.join(HERE, "configs")
# The gattd Python library (python/gattd) for this suite and every program it starts
# (examples/*.py, config/examples/*/*.py import it as the package installs it).
PYTHON_LIBRARY = os.path.join(REPO, "python")
sys.path.insert(0, PYTHON_LIBRARY)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [PYTHON_LIBRARY, os.environ.get("PYTHONPATH")]))


def pytest_configure(config):
    # `make test-arm64-integration` runs the suites with `-m "not timing and not exec_failure"`.
    # `timing`: the test measures speed or pacing, or races a short window (3 s of pairing)
    # against gattctl's start, which gattd and gattctl under qemu-user (far slower) do not keep
    # (1 kHz streaming for 10 s, notification pacing, a full queue, the pairing window).
    # `exec_failure`: a program that cannot be executed must be refused before it runs; qemu-user
    # runs posix_spawn's child as a fork and cannot hand the failed exec back, so gattd sees a
    # child that exits 127 (seen with missing passkey and onConfirm programs and missing hooks).
    config.addinivalue_line("markers", "timing: measures speed or pacing; deselected under emulation "
                            "(make test-arm64-integration)")
    config.addinivalue_line("markers", "exec_failure: a program that cannot be executed; deselected under qemu-user "
                            "(make test-arm64-integration)")
    # `preload`: gattd runs with a C library preloaded (fake_l2cap.c, built for the host), which
    # an arm64 gattd under qemu-user cannot load.
    config.addinivalue_line("markers", "preload: gattd runs with Tests/integration/fake_l2cap.c preloaded; deselected "
                            "under qemu-user (make test-arm64-integration)")


def _executable(variable, path, how):
    if not path:
        pytest.fail("%s is not set (%s)" % (variable, how), pytrace=False)
    if not os.access(path, os.X_OK):
        pytest.fail("%s=%s is not an executable file (%s)" % (variable, path, how), pytrace=False)
    return path


def gattd_emulated():
    """True when the gattd under test runs under qemu-user: scripts/arm64-wrappers writes the
    line "# emulated: qemu-user" into its wrappers (Tests/vm/run-suite reads the same line)."""
    with open(gattd_binary(), "rb") as f:
        return b"\n# emulated: qemu-user\n" in f.read(4096)


def gattd_binary():
    """The gattd under test: $GATTD_BIN (`make test-integration` sets it)."""
    return _executable("GATTD_BIN", os.environ.get("GATTD_BIN"),
                       "e.g. GATTD_BIN=$PWD/.build/debug/gattd after `swift build`")


def gattctl_binary():
    """The gattctl under test: $GATTCTL_BIN, else the gattctl next to $GATTD_BIN."""
    if os.environ.get("GATTCTL_BIN"):
        return _executable("GATTCTL_BIN", os.environ["GATTCTL_BIN"], "the gattctl to test")
    return _executable("GATTCTL_BIN", os.path.join(os.path.dirname(gattd_binary()), "gattctl"),
                       "not set, and no gattctl next to $GATTD_BIN")


def run_gattctl(private_bus, *args):
    """gattctl with `args` against the gattd on the private bus -> CompletedProcess."""
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address)
    return subprocess.run([gattctl_binary(), *args], capture_output=True, text=True, env=env, timeout=30)


def watch_events(private_bus):
    """`gattctl watch --json` on the private bus, once it says it is watching; stop() it."""
    watch = Child([gattctl_binary(), "watch", "--json"], env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address})
    assert watch.wait_for_line("watching", 10)
    return watch


def watch_event(watch, within=10, **fields):
    """The next event of `watch` (watch_events) with these fields, within `within` seconds;
    the assertion shows the last lines it printed."""
    def matches(line):
        try:
            item = json.loads(line)
        except ValueError:
            return False
        return all(item.get(k) == v for k, v in fields.items())
    line = watch.out.wait_for(matches, within)
    assert line is not None, "no event %s; saw:\n%s" % (fields, "\n".join(watch.out.lines[-15:]))
    return json.loads(line)


class Gattd:
    """A running gattd; `log_path` holds its stdout and stderr."""

    def __init__(self, private_bus, config, log_path, state_dir, env=None, closed_fds=(), prefix=(), args=()):
        self.log = open(log_path, "a")
        self.state_dir = state_dir
        env_extra = {"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address, "STATE_DIRECTORY": state_dir}
        env_extra.update(env or {})
        self.child = Child(list(prefix) + [gattd_binary(), "--config", config] + list(args), env_extra=env_extra, log=self.log,
                           closed_fds=closed_fds)

    def alive(self):
        return self.child.proc.poll() is None

    def stop(self):
        self.child.stop()
        self.log.close()


@pytest.fixture
def start_gattd(private_bus, tmp_path, request):
    """start_gattd(config_name, state_dir=None, env=None, closed_fds=(), prefix=(), args=()) -> Gattd; fails the test
    when the binary is absent. The state directory defaults to one per test; `env` adds variables
    (NOTIFY_SOCKET, WATCHDOG_USEC); an absolute config_name is used as it is; `prefix` is a
    command that execs gattd (`nice -n 5`, `chrt --idle 0`), so the process is still gattd;
    `args` follow `--config` (`--log-level warning`)."""
    gattd_binary()
    started = []
    log_path = str(tmp_path / "gattd.log")

    def start(config_name, state_dir=None, env=None, closed_fds=(), prefix=(), args=()):
        g = Gattd(private_bus, os.path.join(CONFIGS, config_name), log_path,
                  state_dir or str(tmp_path / "state"), env, closed_fds=closed_fds, prefix=prefix, args=args)
        started.append(g)
        return g

    yield start
    for g in started:
        g.stop()
    print_on_failure(request, "gattd output", log_path)


@pytest.fixture
def notify():
    """systemd's side of sd_notify: pass notify.env() to start_gattd (notify_socket.py)."""
    sock = NotifySocket()
    yield sock
    sock.close()
