# SPDX-License-Identifier: MIT
"""Live values: timed sources, pacing, write hooks, as the stand-in sees them.

Every wait is a stand-in call that returns on the event or fails with a timeout;
"nothing happens" is proved by a WaitForNotifications that must time out.
"""

import json
import os
import select
import signal
import struct
import time

import dbus
import pytest

from harness import DEVICE, by_uuid
from fixtures import path_of

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(REPO, "config")
WAIT_MS = dbus.UInt32(10000)
MTU = dbus.UInt16(23)
HR_MEASUREMENT = "2a37"
BATTERY_LEVEL = "2a19"
FAST = "12345678-1234-5678-1234-56789abc6001"
TIMEOUT = "org.gattd.test.Error.Timeout"


def start(start_gattd, standin, config):
    g = start_gattd(config)
    standin.call("WaitForApplication", WAIT_MS)
    return g


def notifications(standin, path):
    return [bytes(v) for v in standin.call("Notifications", path)]


def times_s(standin, path):
    return [t / 1e6 for t in standin.call("NotificationTimes", path)]


def assert_silent(standin, path, window_ms):
    """No notification beyond those already seen arrives within window_ms."""
    seen = len(standin.call("Notifications", path))
    with pytest.raises(dbus.exceptions.DBusException) as err:
        standin.call("WaitForNotifications", path, dbus.UInt32(seen + 1), dbus.UInt32(window_ms))
    assert err.value.get_dbus_name() == TIMEOUT
    return seen


def test_heart_rate_example_notifies_at_its_rate_only_while_subscribed(start_gattd, standin):
    g = start(start_gattd, standin, os.path.join(EXAMPLES, "heart-rate.json"))
    path = path_of(standin, HR_MEASUREMENT)
    assert_silent(standin, path, 1500)  # nobody subscribed: the timer does not run
    subscribed = time.monotonic()  # the stand-in stamps with the same clock (CLOCK_MONOTONIC)
    assert standin.call("Subscribe", path, DEVICE) == 0
    standin.call("WaitForNotifications", path, dbus.UInt32(4), WAIT_MS)
    values = notifications(standin, path)[:4]
    # The first tick (at StartNotify) gives 60, the defined value, so the first change is 61:
    # one value per tick, none skipped or repeated.
    assert values == [bytes([0, 61]), bytes([0, 62]), bytes([0, 63]), bytes([0, 64])]
    after = [t - subscribed for t in times_s(standin, path)[:4]]
    print("heart-rate notifications at (s after Subscribe):", ["%.3f" % t for t in after])
    # The times are when the stand-in (a Python process) took each signal in: a loaded machine
    # delays any of them, never advances one. gattd's timer (1 s grid from StartNotify) cannot
    # fire early, so the n-th change arrives no sooner than n s after Subscribe: a faster timer
    # fails this whatever the load. A slower one (2 s, 8 s for four) fails the upper bound,
    # which leaves 3 s for a loaded machine's delays rather than a tolerance on each gap.
    assert all(t >= n - 0.002 for n, t in enumerate(after, start=1)), after
    assert after[3] < 7.0, after
    standin.call("Unsubscribe", path, DEVICE)
    # A tick may have been on its way when StopNotify left; after that, silence.
    seen = len(standin.call("Notifications", path))
    assert seen <= 5
    assert_silent(standin, path, 2500)
    assert g.alive()


def test_battery_example_follows_its_file_and_stays_silent_unsubscribed(start_gattd, standin, tmp_path):
    capacity = tmp_path / "capacity"
    capacity.write_text("50\n")
    with open(os.path.join(EXAMPLES, "battery.json")) as f:
        config = json.load(f)
    update = config["services"][0]["characteristics"][0]["update"]
    assert update["source"]["file"]["path"] == "/sys/class/power_supply/BAT0/capacity"
    update["source"]["file"]["path"] = str(capacity)
    update["everyMs"] = 200  # the example's 10 s, shortened for the test
    config_path = tmp_path / "battery.json"
    config_path.write_text(json.dumps(config))
    start(start_gattd, standin, str(config_path))
    path = path_of(standin, BATTERY_LEVEL)
    # whileUnsubscribed: the value is fresh before anyone subscribes.
    standin.call("Subscribe", path, DEVICE)
    assert bytes(standin.call("Read", path, dbus.UInt16(0), MTU, DEVICE)) == bytes([50])
    capacity.write_text("49\n")
    standin.call("WaitForNotifications", path, dbus.UInt32(1), WAIT_MS)
    capacity.write_text("48\n")
    standin.call("WaitForNotifications", path, dbus.UInt32(2), WAIT_MS)
    assert notifications(standin, path) == [bytes([49]), bytes([48])]
    assert_silent(standin, path, 600)  # unchanged value: no notification
    standin.call("Unsubscribe", path, DEVICE)
    capacity.write_text("47\n")
    assert_silent(standin, path, 1000)
    # whileUnsubscribed keeps reads fresh.
    assert bytes(standin.call("Read", path, dbus.UInt16(0), MTU, DEVICE)) == bytes([47])


@pytest.mark.timing
def test_flood_is_paced_latest_value_wins(start_gattd, standin):
    start(start_gattd, standin, "live-flood.json")
    path = path_of(standin, FAST)
    subscribed = time.monotonic()
    standin.call("Subscribe", path, DEVICE)
    standin.call("WaitForNotifications", path, dbus.UInt32(1), WAIT_MS)
    window_ms = 3000
    assert_silent_or_count = len(standin.call("Notifications", path))
    with pytest.raises(dbus.exceptions.DBusException):
        # More than the pacing allows must never arrive: this wait has to time out.
        standin.call("WaitForNotifications", path, dbus.UInt32(assert_silent_or_count + 1000),
                     dbus.UInt32(window_ms))
    # At least 20 (a second's worth) however slow the machine: a count, not a time window.
    standin.call("WaitForNotifications", path, dbus.UInt32(20), WAIT_MS)
    standin.call("Unsubscribe", path, DEVICE)
    unsubscribed = time.monotonic()
    times = times_s(standin, path)
    values = [struct.unpack("<H", v)[0] for v in notifications(standin, path)]
    span = times[-1] - times[0]
    rate = (len(times) - 1) / span
    gaps = [b - a for a, b in zip(times, times[1:])]
    steps = [(b - a) % 65536 for a, b in zip(values, values[1:])]  # the uint16 counter may wrap
    median_gap = sorted(gaps)[len(gaps) // 2]
    print("flood: %d notifications in %.3f s = %.1f/s; gaps at the stand-in: median %.1f ms, min %.1f ms; "
          "counter steps between notifications: min %d, median %d (the counter ticks every 10 ms)"
          % (len(times), span, rate, median_gap * 1000, min(gaps) * 1000, min(steps),
             sorted(steps)[len(steps) // 2]))
    # Every notification was sent between Subscribe and Unsubscribe (both timed by this process,
    # before and after): paced 50 ms apart, at most 20 a second of that window plus the first.
    # Delays (a loaded machine, the stand-in's scheduling) only lower the count, so this bound
    # fails a faster pacing and never a slow machine. The gaps and counter steps printed above
    # are the detail: neither is a check, since the stand-in's receive times bunch when it is
    # descheduled and gattd's 10 ms counter skips ticks it was too late for.
    window = unsubscribed - subscribed
    assert len(times) <= window * 20 + 1, "%d notifications in %.3f s: more than 20 a second" % (len(times), window)
    assert all(0 < step < 32768 for step in steps), "no stale value arrives after a newer one"


@pytest.fixture
def hook_config(tmp_path):
    written = tmp_path / "written"
    config = {
        "version": 1,
        "services": [{"id": "hooks", "uuid": "12345678-1234-5678-1234-56789abc6100", "characteristics": [
            {"id": "gate", "uuid": "12345678-1234-5678-1234-56789abc6101", "flags": ["read", "write"],
             "value": {"hex": "ff"}, "maxLength": 4, "persist": False,
             "onWrite": {"argv": ["/bin/sh", "-c", "test \"$GATT_VALUE_HEX\" = 00 && exit 0; exit 128"],
                         "decides": True, "timeoutMs": 5000}},
            {"id": "log", "uuid": "12345678-1234-5678-1234-56789abc6102", "flags": ["read", "write"],
             "maxLength": 8, "persist": False,
             "onWrite": {"argv": ["/bin/sh", "-c", "{ printf '%s %s %s ' \"$GATT_ID\" \"$GATT_DEVICE\" \"$GATT_DEVICE_PATH\"; cat; } > \"$1\"",
                                  "sh", str(written)]}},
        ]}],
    }
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps(config))
    return str(path), written


def test_deciding_hook_refuses_with_0x80_and_accepts_with_0(start_gattd, standin, hook_config):
    config, _ = hook_config
    start(start_gattd, standin, config)
    gate = path_of(standin, "12345678-1234-5678-1234-56789abc6101")

    def att_write(value):
        return int(standin.call("WriteAtt", gate, dbus.ByteArray(value), dbus.UInt16(0), MTU, DEVICE, False))

    def read():
        return bytes(standin.call("Read", gate, dbus.UInt16(0), MTU, DEVICE))

    assert att_write(b"\x01") == 0x80
    assert read() == b"\xff", "a refused value is not stored"
    assert att_write(b"\x00") == 0
    assert read() == b"\x00"


@pytest.mark.exec_failure
def test_deciding_hook_that_decides_nothing_refuses_and_says_why(start_gattd, standin, tmp_path):
    """Fail closed (docs/fail-closed.md): a deciding hook that cannot start (missing, not executable),
    times out or is killed made no decision, so the write is refused with 0x0E and not stored."""
    not_executable = tmp_path / "not-executable"
    not_executable.write_text("#!/bin/sh\nexit 0\n")
    not_executable.chmod(0o644)
    hooks = {
        "missing": [str(tmp_path / "missing-hook")],
        "noexec": [str(not_executable)],
        "slow": ["/bin/sh", "-c", "exec sleep 30"],
        "killed": ["/bin/sh", "-c", "kill -9 $$"],
    }
    characteristics = [
        {"id": name, "uuid": "12345678-1234-5678-1234-56789abc63%02x" % (i + 1), "flags": ["read", "write"],
         "value": {"hex": "ff"}, "maxLength": 4, "persist": False,
         "onWrite": {"argv": argv, "decides": True, "timeoutMs": 300}}
        for i, (name, argv) in enumerate(sorted(hooks.items()))]
    config = tmp_path / "undecided.json"
    config.write_text(json.dumps({"version": 1, "services": [
        {"id": "undecided", "uuid": "12345678-1234-5678-1234-56789abc6300", "characteristics": characteristics}]}))
    g = start(start_gattd, standin, str(config))
    for i, name in enumerate(sorted(hooks)):
        path = path_of(standin, "12345678-1234-5678-1234-56789abc63%02x" % (i + 1))
        code = int(standin.call("WriteAtt", path, dbus.ByteArray(b"\x01"), dbus.UInt16(0), MTU, DEVICE, False))
        assert code == 0x0E, "%s: %#x" % (name, code)
        assert bytes(standin.call("Read", path, dbus.UInt16(0), MTU, DEVICE)) == b"\xff", "%s: stored" % name
    for line in ("cannot start", "No such file", "Permission denied",
                 "write refused: the deciding hook could not run",
                 "write refused: the deciding hook gave no verdict (timed out)",
                 "write refused: the deciding hook gave no verdict (killed by signal 9)"):
        assert g.child.wait_for_line(line, 5), line


def test_hook_gets_the_value_on_stdin_after_the_write(start_gattd, standin, hook_config):
    config, written = hook_config
    start(start_gattd, standin, config)
    log = path_of(standin, "12345678-1234-5678-1234-56789abc6102")
    value = b"a;$(x)\n"
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    standin.call("Write", log, dbus.ByteArray(value), dbus.UInt16(0), MTU, DEVICE, False)
    # The hook runs after the reply; a read round trip cannot order it, so wait for its file.
    import time
    deadline = time.monotonic() + 10
    while not (written.exists() and written.read_bytes().endswith(value)):
        assert time.monotonic() < deadline, "the hook did not write its file"
        time.sleep(0.01)
    # GATT_DEVICE: the central's address as bluetoothd gives it; GATT_DEVICE_PATH: its object.
    assert written.read_bytes() == b"log 00:11:22:33:44:55 " + DEVICE.encode() + b" " + value


def test_started_with_descriptors_0_to_2_closed_it_serves(start_gattd, standin, hook_config):
    """gattd started with stdin, stdout and stderr closed (a shell's `<&- >&- 2>&-`) puts
    /dev/null there first: otherwise its D-Bus socket takes one of those numbers, the log
    is written into it, and the bus drops the connection (gattd died of SIGPIPE)."""
    config, written = hook_config
    g = start_gattd(config, closed_fds=(0, 1, 2))
    standin.call("WaitForApplication", WAIT_MS)
    log = path_of(standin, "12345678-1234-5678-1234-56789abc6102")
    standin.call("Write", log, dbus.ByteArray(b"\x01\x02"), dbus.UInt16(0), MTU, DEVICE, False)
    assert bytes(standin.call("Read", log, dbus.UInt16(0), MTU, DEVICE)) == b"\x01\x02"
    import time
    deadline = time.monotonic() + 10
    while not (written.exists() and written.read_bytes().endswith(b"\x01\x02")):
        assert time.monotonic() < deadline, "the hook did not get the value on its stdin"
        time.sleep(0.01)
    assert g.alive()


def test_hooks_still_running_are_stopped_with_the_daemon(start_gattd, standin, tmp_path):
    """A hook program (deciding or not) that is still running when gattd stops gets
    SIGTERM, also after a reload replaced the tree: nothing gattd started outlives it."""
    pids = tmp_path / "pids"
    pids.mkdir()
    # each hook writes its pid, then becomes a long sleep (same pid: exec)
    hook = ["/bin/sh", "-c", 'echo $$ > "$1/$GATT_ID.tmp" && mv "$1/$GATT_ID.tmp" "$1/$GATT_ID" && exec sleep 600',
            "sh", str(pids)]
    config = {"version": 1, "services": [{"id": "hooks", "uuid": "12345678-1234-5678-1234-56789abc6200",
              "characteristics": [
                  {"id": "later", "uuid": "12345678-1234-5678-1234-56789abc6201", "flags": ["read", "write"],
                   "maxLength": 4, "persist": False, "onWrite": {"argv": hook}},
                  {"id": "decides", "uuid": "12345678-1234-5678-1234-56789abc6202", "flags": ["read", "write"],
                   "maxLength": 4, "persist": False,
                   "onWrite": {"argv": hook, "decides": True, "timeoutMs": 60000}}]}]}
    config_path = tmp_path / "hooks.json"
    config_path.write_text(json.dumps(config))
    g = start(start_gattd, standin, str(config_path))
    later = path_of(standin, "12345678-1234-5678-1234-56789abc6201")
    decides = path_of(standin, "12345678-1234-5678-1234-56789abc6202")
    standin.call("Write", later, dbus.ByteArray(b"\x01"), dbus.UInt16(0), MTU, DEVICE, False)
    # the deciding hook does not answer while it sleeps: send this one without waiting
    standin.control.WriteAtt(decides, dbus.ByteArray(b"\x02"), dbus.UInt16(0), MTU, DEVICE, False,
                             ignore_reply=True)
    import time
    deadline = time.monotonic() + 10
    while not ((pids / "later").exists() and (pids / "decides").exists()):
        assert time.monotonic() < deadline, "the hooks did not start"
        time.sleep(0.01)
    watched = {name: os.pidfd_open(int((pids / name).read_text())) for name in ("later", "decides")}
    try:
        # a reload that rebuilds the tree replaces the hook runner: its programs stay known
        config["services"][0]["characteristics"].append(
            {"id": "added", "uuid": "12345678-1234-5678-1234-56789abc6203", "flags": ["read"],
             "value": {"hex": "00"}})
        config_path.write_text(json.dumps(config))
        g.child.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while not by_uuid(standin.call("Attributes"), "12345678-1234-5678-1234-56789abc6203"):
            assert time.monotonic() < deadline, "the reloaded tree was not registered"
            time.sleep(0.01)
        g.child.stop()  # SIGTERM (the log stays open for the lines read below)
        assert g.child.proc.returncode == 0
        for name, fd in watched.items():
            ready, _, _ = select.select([fd], [], [], 5)
            assert ready, "the %s hook (sleep 600) still runs after gattd stopped" % name
    finally:
        for fd in watched.values():
            os.close(fd)
    for name in watched:
        assert g.child.wait_for_line("stopping write hook", timeout=5), "gattd did not log stopping two hooks"


def test_counter_continues_where_it_stopped_after_a_restart(start_gattd, standin, tmp_path):
    """A counter source's position is saved (at the latest on SIGTERM) and a
    restarted gattd continues from it instead of starting over."""
    config = {"version": 1, "services": [{"id": "svc", "uuid": "12345678-1234-5678-1234-56789abc7000",
              "characteristics": [{"id": "count", "uuid": FAST, "flags": ["read", "notify"],
                                   "value": {"uint16": 0},
                                   "update": {"everyMs": 20,
                                              "source": {"counter": {"start": 0, "step": 1, "min": 0, "max": 60000}},
                                              "encode": {"uint16": "$"}}}]}]}
    config_path = tmp_path / "counter.json"
    config_path.write_text(json.dumps(config))
    g = start(start_gattd, standin, str(config_path))
    path = path_of(standin, FAST)
    standin.call("Subscribe", path, DEVICE)
    standin.call("WaitForNotifications", path, dbus.UInt32(5), WAIT_MS)
    standin.call("Unsubscribe", path, DEVICE)  # the timer stops with the last subscriber
    g.stop()  # SIGTERM: flushes the counter
    before = max(struct.unpack("<H", v)[0] for v in notifications(standin, path))
    seen = len(notifications(standin, path))
    start(start_gattd, standin, str(config_path))  # same state directory
    path = path_of(standin, FAST)
    standin.call("Subscribe", path, DEVICE)
    standin.call("WaitForNotifications", path, dbus.UInt32(seen + 1), WAIT_MS)
    after = struct.unpack("<H", notifications(standin, path)[seen])[0]
    assert after > before, "counter restarted at %d after reaching %d" % (after, before)
