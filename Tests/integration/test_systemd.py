# SPDX-License-Identifier: MIT
"""gattd as a systemd service: the sd_notify sequence, SIGHUP reload, SIGTERM.

systemd's side of sd_notify is a datagram socket the test owns (notify_socket.py);
bluetoothd is the stand-in, whose log and control methods show what gattd registered,
unregistered and updated. Every wait is on a datagram, a D-Bus reply or a process exit,
with a deadline.
"""

import json
import os
import shutil
import signal
import time

import dbus
import pytest

from conftest import CONFIGS, run_gattctl
from harness import by_uuid
from fixtures import DEVICE, edit_config, path_of, read, wait_until, write

LABEL = "12345678-1234-5678-1234-56789abc6001"
EXTRA = "12345678-1234-5678-1234-56789abc6002"
LEVEL = "2A19"
MAIN = "/org/gattd/adv/main"


@pytest.fixture
def config(tmp_path):
    """A copy of configs/reload.json the test may edit; returns its path."""
    path = str(tmp_path / "gattd.json")
    shutil.copy(os.path.join(CONFIGS, "reload.json"), path)
    return path


def standin_log(standin, text):
    return [str(line) for line in standin.call("Log") if text in str(line)]


def start_ready(start_gattd, config, notify, **env):
    g = start_gattd(config, env=notify.env(**env))
    ready = notify.wait_key("READY", timeout=15)
    assert ready is not None, "no READY=1 within 15 s; got %r" % notify.messages
    return g, ready


def reload(g, notify):
    """SIGHUP; returns (RELOADING message, the READY message after it)."""
    before_us = time.monotonic_ns() // 1000
    g.child.proc.send_signal(signal.SIGHUP)
    reloading = notify.wait_key("RELOADING", timeout=10)
    assert reloading is not None, "no RELOADING=1 after SIGHUP; got %r" % notify.messages
    ready = notify.wait_key("READY", timeout=15)
    assert ready is not None, "no READY=1 after RELOADING=1; got %r" % notify.messages
    reloading.sent_after_us = before_us
    return reloading, ready


# systemd/gattd.service's TimeoutStopSec: the promise is that systemd never has to kill gattd.
# gattd bounds its own stop at 1.5 s; the test's bound is the unit's, so a loaded or emulated
# machine slow to start and end a process does not fail it, and a gattd waiting on a call
# timeout (libdbus: 25 s) does.
STOP_BOUND = 10.0


def stop(g, timeout=2.0):
    """SIGTERM; returns (exit status, seconds it took)."""
    started = time.monotonic()
    g.child.proc.send_signal(signal.SIGTERM)
    status = g.child.proc.wait(10)
    return status, time.monotonic() - started


# -- the notify sequence -------------------------------------------------------------


def test_ready_only_once_application_and_advertisement_are_registered(start_gattd, standin, config, notify):
    g, ready = start_ready(start_gattd, config, notify)
    # When READY=1 arrives, bluetoothd already holds both registrations.
    assert len(standin.call("Applications")) == 1
    assert [str(a["path"]) for a in standin.call("Adverts")] == [MAIN]
    assert ready["STATUS"] == "serving 1 service on hci0, advertising main"
    before = notify.messages[:notify.index(ready)]
    assert not any("READY" in m for m in before), "READY=1 sent twice: %r" % notify.messages
    statuses = [m["STATUS"] for m in before if "STATUS" in m]
    assert "registering on hci0" in statuses, statuses

    status, took = stop(g)
    assert notify.wait_key("STOPPING", timeout=2) is not None, notify.messages
    assert status == 0 and took < STOP_BOUND, "took %.2f s" % took
    notify.drain()
    assert not any("WATCHDOG" in m for m in notify.messages), "WATCHDOG=1 without WATCHDOG_USEC"


def test_watchdog_pings_arrive_when_watchdog_usec_is_set(start_gattd, standin, config, notify):
    start_ready(start_gattd, config, notify, WATCHDOG_USEC="200000")
    pings = [notify.wait_key("WATCHDOG", timeout=2) for _ in range(3)]
    assert all(p is not None for p in pings), "fewer than 3 WATCHDOG=1 in 6 s at WATCHDOG_USEC=200000"


def test_ready_when_bluetoothd_is_absent_says_so(start_gattd, private_bus, config, notify):
    g, ready = start_ready(start_gattd, config, notify)
    assert ready["STATUS"] == "waiting for org.bluez"
    assert g.alive()


def test_reload_sends_reloading_with_monotonic_time_then_ready(start_gattd, standin, config, notify):
    g, _ = start_ready(start_gattd, config, notify)
    reloading, ready = reload(g, notify)
    # MONOTONIC_USEC is CLOCK_MONOTONIC, the clock of time.monotonic_ns() on Linux.
    assert reloading.sent_after_us <= int(reloading["MONOTONIC_USEC"]) <= reloading.received_us
    assert notify.index(ready) > notify.index(reloading)
    assert ready["STATUS"] == "serving 1 service on hci0, advertising main"


# -- reload --------------------------------------------------------------------------


def test_reload_updates_advertisement_data_in_place(start_gattd, standin, config, notify):
    g, _ = start_ready(start_gattd, config, notify)
    edit_config(config, lambda d: d["advertisements"][0].update(manufacturerData={"0xFFFF": {"hex": "0a0b0c"}}))
    reload(g, notify)

    def updated():
        return [u for u in standin.call("AdvertUpdates", MAIN) if str(u["property"]) == "ManufacturerData"]
    wait_until(updated, 5, "a PropertiesChanged(ManufacturerData) on the advertisement")
    value = updated()[-1]["value"]
    assert {int(k): bytes(bytearray(int(b) for b in v)) for k, v in value.items()} == {0xFFFF: b"\x0a\x0b\x0c"}
    assert len(standin_log(standin, "RegisterAdvertisement %s %s: instance" % (g_owner(standin), MAIN))) == 1
    assert len(standin_log(standin, "registered 1 services")) == 1, "the application was registered again"


def g_owner(standin):
    return str(standin.call("Applications")[0][0])


def test_reload_with_an_added_characteristic_registers_the_new_tree_and_keeps_written_values(
        start_gattd, standin, config, notify):
    g, _ = start_ready(start_gattd, config, notify)
    write(standin, LABEL, b"kitchen")
    edit_config(config, lambda d: d["services"][0]["characteristics"].append(
        {"id": "extra", "uuid": EXTRA, "flags": ["read"], "value": {"utf8": "new"}}))
    _, ready = reload(g, notify)
    assert ready["STATUS"] == "serving 1 service on hci0, advertising main"
    assert len(standin_log(standin, "dropped (UnregisterApplication)")) == 1
    assert read(standin, EXTRA) == b"new"
    assert read(standin, LABEL) == b"kitchen", "a written value must survive the re-registration"
    assert len(standin.call("Applications")) == 1
    assert g.child.wait_for_line("reloaded: GATT tree: characteristic extra added", 5) is not None


def registrations(standin):
    """The RegisterApplication calls and the UnregisterApplication drops the stand-in saw."""
    return (len(standin_log(standin, ": GetManagedObjects")),
            len(standin_log(standin, "dropped (UnregisterApplication)")))


def test_reload_registers_unregisters_or_replaces_only_the_services_that_changed(
        start_gattd, standin, config, notify, private_bus):
    """One application per service: bluetoothd sends a connected central Service Changed
    only for what a reload added, removed or changed (issue 31)."""
    other = {"id": "other", "uuid": "12345678-1234-5678-1234-56789abc6100", "characteristics": [
        {"id": "other-value", "uuid": "12345678-1234-5678-1234-56789abc6101", "flags": ["read"],
         "value": {"utf8": "other"}}]}
    edit_config(config, lambda d: d["services"].append(other))
    g, _ = start_ready(start_gattd, config, notify)
    assert registrations(standin) == (2, 0)
    assert len(standin.call("Applications")) == 2
    write(standin, LABEL, b"kitchen")
    level = path_of(standin, LEVEL)
    standin.call("Subscribe", level, DEVICE)

    # Added: that one service registered alone; the others untouched and still served.
    added = {"id": "added", "uuid": "12345678-1234-5678-1234-56789abc6200", "characteristics": [
        {"id": "extra", "uuid": EXTRA, "flags": ["read"], "value": {"utf8": "new"}}]}
    edit_config(config, lambda d: d["services"].insert(0, added))
    reload(g, notify)
    assert registrations(standin) == (3, 0)
    assert read(standin, EXTRA) == b"new"
    assert read(standin, LABEL) == b"kitchen"
    # The untouched service's subscription goes on (bluetoothd will not subscribe again).
    out = run_gattctl(private_bus, "set", "level", "--uint8", "42")
    assert out.returncode == 0, out.stderr
    assert bytes(standin.call("WaitForNotifications", level, dbus.UInt32(1), dbus.UInt32(5000))[-1]) == b"\x2a"

    # Nothing bluetoothd reads changed (a behaviour key only): nothing registered or dropped.
    edit_config(config, lambda d: d["services"][1]["characteristics"][0].update(persist=False))
    reload(g, notify)
    assert g.child.wait_for_line("reloaded: behaviour of label", 5) is not None
    assert registrations(standin) == (3, 0)

    # Changed: that service alone replaced.
    edit_config(config, lambda d: d["services"][2]["characteristics"][0].update(flags=["read", "write"]))
    reload(g, notify)
    assert registrations(standin) == (4, 1)
    assert read(standin, LABEL) == b"kitchen"

    # Removed: that service alone unregistered.
    edit_config(config, lambda d: d["services"].pop(2))
    reload(g, notify)
    assert registrations(standin) == (4, 2)
    assert len(standin.call("Applications")) == 2
    assert not by_uuid(standin.call("Attributes"), "12345678-1234-5678-1234-56789abc6101")

    # bluetoothd restarting: every application registered again.
    standin.restart(signal.SIGKILL)
    apps = standin.call("WaitForApplications", dbus.UInt32(2), dbus.UInt32(15000))
    assert len(apps) == 2
    assert read(standin, EXTRA) == b"new" and read(standin, LABEL) == b"kitchen"


def test_reload_applies_new_initial_values_only_where_nobody_wrote(start_gattd, standin, config, notify):
    g, _ = start_ready(start_gattd, config, notify)
    write(standin, LABEL, b"kitchen")

    def change(d):
        label, level = d["services"][0]["characteristics"]
        label["value"] = {"utf8": "plant"}
        level["value"] = {"uint8": 42}
    edit_config(config, change)
    reload(g, notify)
    assert read(standin, LEVEL) == b"\x2a"
    assert read(standin, LABEL) == b"kitchen"
    assert not standin_log(standin, "dropped (UnregisterApplication)"), "initial values need no re-registration"


def test_reload_with_an_invalid_file_keeps_serving_the_old_tree(start_gattd, standin, config, notify):
    g, _ = start_ready(start_gattd, config, notify)
    edit_config(config, lambda d: d["services"][0]["characteristics"][0].update(flags=["reed", "write"]))
    _, ready = reload(g, notify)
    assert ready["STATUS"].startswith("reload failed: 1 error in %s" % config), ready
    line = g.child.wait_for_line("services[0].characteristics[0].flags[0]", 5)
    assert line is not None and "error" in line, "the error must be logged with its JSON path"
    assert read(standin, LABEL) == b"factory"
    assert not standin_log(standin, "dropped (UnregisterApplication)")
    # Fixed again: the next reload goes through.
    edit_config(config, lambda d: d["services"][0]["characteristics"][0].update(flags=["read", "write"]))
    _, ready = reload(g, notify)
    assert ready["STATUS"] == "serving 1 service on hci0, advertising main"


# -- SIGTERM -------------------------------------------------------------------------


def test_sigterm_unregisters_flushes_and_exits_before_systemd_would_kill(start_gattd, standin, config, notify, tmp_path):
    g, _ = start_ready(start_gattd, config, notify)
    write(standin, LABEL, b"kitchen")
    status, took = stop(g)
    assert status == 0
    assert took < STOP_BOUND, "took %.2f s" % took
    assert notify.wait_key("STOPPING", timeout=1) is not None
    with open(os.path.join(g.state_dir, "state.json")) as f:
        assert bytes.fromhex(json.load(f)["characteristics"]["label"]["value"]) == b"kitchen"
    assert len(standin_log(standin, "dropped (UnregisterApplication)")) == 1
    assert len(standin_log(standin, "removed (UnregisterAdvertisement)")) == 1


def test_sigterm_while_bluetoothd_is_frozen_exits_on_its_own_bound(start_gattd, standin, config, notify):
    g, _ = start_ready(start_gattd, config, notify)
    standin.proc.send_signal(signal.SIGSTOP)
    try:
        status, took = stop(g)
    finally:
        standin.proc.send_signal(signal.SIGCONT)
    assert status == 0
    # gattd gave up on its own bounds (1 s per unregistering call, 1.5 s for them all), not on
    # libdbus's 25 s default: its log says so, whatever the machine's speed. STOP_BOUND is the
    # unit's.
    assert g.child.out.wait_for(lambda line: "could not unregister" in line and "NoReply" in line
                                or "unregistering took too long; exiting anyway" in line, 1)
    assert took < STOP_BOUND, "took %.2f s" % took


def test_control_api_follows_a_reload_that_rebuilds_the_tree(start_gattd, standin, config, notify, private_bus):
    """After a reload replaced the attribute database, gattctl reads and sets the new one."""
    import subprocess
    from conftest import gattctl_binary
    gattctl = gattctl_binary()
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address)

    def ctl(*args):
        return subprocess.run([gattctl, *args], capture_output=True, text=True, env=env, timeout=30)

    g, _ = start_ready(start_gattd, config, notify)
    assert g.child.wait_for_line("control API ready", 10) is not None
    edit_config(config, lambda d: d["services"][0]["characteristics"].append(
        {"id": "extra", "uuid": EXTRA, "flags": ["read"], "value": {"utf8": "new"}}))
    reload(g, notify)
    got = ctl("get", "extra")
    assert got.returncode == 0, got.stderr
    assert "new" in got.stdout
    assert ctl("set", "label", "--utf8", "after").returncode == 0
    assert read(standin, LABEL) == b"after", "a set after the reload must reach the served tree"
