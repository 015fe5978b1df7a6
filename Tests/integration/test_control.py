# SPDX-License-Identifier: MIT
"""The control API (org.gattd.Manager1) and gattctl against gattd and the stand-in.

gattctl runs as a child with DBUS_SYSTEM_BUS_ADDRESS set to the private bus; every wait
is on an event (a stand-in reply, a line on gattctl's or gattd's output) with a timeout.
Skipped with a clear message when the binaries are not built.
"""

import json

import dbus
import pytest

from conftest import gattctl_binary, run_gattctl
from harness import DEVICE, Child
from fixtures import path_of

WAIT_MS = dbus.UInt32(10000)
MTU = dbus.UInt16(23)
HR_MEASUREMENT = "2a37"
DEVICE_LABEL = "12345678-1234-5678-1234-56789abcdef1"


@pytest.fixture
def gattctl(private_bus):
    """gattctl(*args) -> CompletedProcess, talking to gattd on the private bus."""
    def run(*args):
        return run_gattctl(private_bus, *args)
    run.binary = gattctl_binary()
    run.env = {"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address}
    return run


@pytest.fixture
def gattd(start_gattd, standin):
    g = start_gattd("control.json")
    standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10), "gattd did not take org.gattd"
    yield g
    assert getattr(g, "restarted", False) or g.alive(), "gattd exited during the test"


def adverts(standin):
    return sorted(str(a["path"]) for a in standin.call("Adverts"))


def wait_registered(g, advert_id, count=1):
    seen = [0]

    def predicate(line):
        if "advertisement registered" in line and "adv.id=%s " % advert_id in line + " ":
            seen[0] += 1
        return seen[0] >= count
    assert g.child.out.wait_for(predicate, 10), "advertisement %s not registered (#%d)" % (advert_id, count)


def status_json(gattctl):
    result = gattctl("status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# -- values ------------------------------------------------------------------------------


def test_set_reaches_a_subscribed_central_as_a_notification(gattd, standin, gattctl):
    path = path_of(standin, HR_MEASUREMENT)
    standin.call("Subscribe", path, DEVICE)
    result = gattctl("set", "hr-measurement", '[{"uint8": 0}, {"uint8": 99}]')
    assert (result.returncode, result.stderr) == (0, "")
    values = standin.call("WaitForNotifications", path, dbus.UInt32(1), WAIT_MS)
    assert bytes(values[-1]) == b"\x00\x63"
    assert gattctl("set", "hr-measurement", "--hex", "00 64").returncode == 0
    values = standin.call("WaitForNotifications", path, dbus.UInt32(2), WAIT_MS)
    assert [bytes(v) for v in values] == [b"\x00\x63", b"\x00\x64"]
    assert gattctl("get", "hr-measurement").stdout.splitlines()[0] == "hex   0x0064"


def test_set_goes_through_a_central_read_and_survives_a_restart(gattd, standin, gattctl, start_gattd):
    assert gattctl("set", "device-label", "--utf8", "kitchen").returncode == 0
    path = path_of(standin, DEVICE_LABEL)
    assert bytes(standin.call("Read", path, dbus.UInt16(0), MTU, DEVICE)) == b"kitchen"
    gattd.restarted = True
    gattd.stop()
    g2 = start_gattd("control.json", state_dir=gattd.state_dir)
    assert g2.child.wait_for_line("control API ready", 10)
    assert json.loads(gattctl("get", "device-label", "--json").stdout) == \
        {"id": "device-label", "hex": "6b69746368656e", "utf8": "kitchen", "type": "utf8", "typed": "kitchen"}


def test_get_and_list_render_values(gattd, standin, gattctl):
    result = gattctl("get", "device-label")
    assert result.returncode == 0
    assert result.stdout.splitlines() == ["hex   0x68656c6c6f", 'utf8  "hello"']
    standin.call("Subscribe", path_of(standin, HR_MEASUREMENT), DEVICE)
    lines = gattctl("list").stdout.splitlines()
    # Aligned columns: id, UUID, handle, flags, state, hex, value (typed when the definition says)
    assert lines == ['hr-measurement  2a37                                  0x000e  notify      subscribed  0x0048        "\\u{0}H"',
                     'device-label    12345678-1234-5678-1234-56789abcdef1  0x0012  read,write  persistent  0x68656c6c6f  "hello"']
    items = [json.loads(line) for line in gattctl("list", "--json").stdout.splitlines()]
    assert [(i["id"], i["subscribed"], i["persistent"], i["hex"], i["handle"]) for i in items] == \
        [("hr-measurement", True, False, "0048", 0x000e), ("device-label", False, True, "68656c6c6f", 0x0012)]


def test_unknown_ids_and_invalid_values_exit_with_documented_codes(gattd, gattctl):
    cases = [
        (("get", "nope"), 3, 'no characteristic has id "nope"'),
        (("set", "nope", "--uint8", "1"), 3, 'no characteristic has id "nope"'),
        (("set", "hr-measurement", "--uint8", "1"), 4, "hr-measurement takes 2...2 bytes, got 1"),
        (("set", "hr-measurement", '{"uint8": 300}'), 4, "300 is out of range"),
        (("set", "hr-measurement", "--uint16", "1}, {\"uint8\": 2"), 4, "--uint16 takes a number"),
        (("set", "device-label", "{not json"), 4, "VALUE is not valid JSON"),
        (("advertise", "off", "nope"), 3, 'no advertisement has id "nope"'),
        (("set", "hr-measurement"), 2, "give the value"),
        (("advertise", "sideways"), 2, "sideways"),
    ]
    for args, code, message in cases:
        result = gattctl(*args)
        assert result.returncode == code, (args, result.returncode, result.stderr)
        assert message in result.stderr, (args, result.stderr)
    # A refused set changed nothing.
    assert gattctl("get", "hr-measurement").stdout.splitlines()[0] == "hex   0x0048"


# -- signals -----------------------------------------------------------------------------


def start_watch(gattctl, *args):
    watch = Child([gattctl.binary, "watch"] + list(args), env_extra=gattctl.env)
    assert watch.wait_for_line("watching", 10), "gattctl watch did not start"
    return watch


def test_watch_shows_a_centrals_write_and_every_change(gattd, standin, gattctl):
    watch = start_watch(gattctl)
    try:
        # The central by the Address bluetoothd gives its object, and the object beside it.
        assert standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True) == DEVICE
        path = path_of(standin, DEVICE_LABEL)
        standin.call("Write", path, dbus.ByteArray(b"hi"), dbus.UInt16(0), MTU, DEVICE, False)
        line = watch.wait_for_line("written device-label", 10)
        assert line == 'written device-label 6869 "hi" address=00:11:22:33:44:55 device=%s' % DEVICE
        assert watch.wait_for_line("changed device-label", 10) == 'changed device-label 6869 "hi" origin=central'
        # The same bytes again: a write, but no change.
        standin.call("Write", path, dbus.ByteArray(b"hi"), dbus.UInt16(0), MTU, DEVICE, False)
        assert gattctl("set", "hr-measurement", "--hex", "0050").returncode == 0
        assert watch.wait_for_line("changed hr-measurement", 10) == 'changed hr-measurement 0050 "\\u{0}P" origin=control'
        events = [l.split()[0] + " " + l.split()[1] for l in watch.out.lines if l.startswith(("written", "changed"))]
        # A write's ValueChanged comes before its ValueWritten; the unchanged write has no ValueChanged.
        assert events == ["changed device-label", "written device-label", "written device-label",
                          "changed hr-measurement"]
    finally:
        watch.stop()
    assert watch.proc.returncode == 0


def test_watch_json_lines(gattd, standin, gattctl):
    watch = start_watch(gattctl, "--json")
    try:
        standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
        standin.call("Write", path_of(standin, DEVICE_LABEL), dbus.ByteArray(b"\xff"), dbus.UInt16(0), MTU,
                     DEVICE, False)
        line = watch.wait_for_line('"written"', 10)
        assert json.loads(line) == {"event": "written", "id": "device-label", "hex": "ff", "utf8": None,
                                    "address": "00:11:22:33:44:55", "device": DEVICE}
    finally:
        watch.stop()


# -- advertisements and status -----------------------------------------------------------


def test_advertise_off_and_on_reaches_bluez_and_survives_a_restart(gattd, standin, gattctl, start_gattd):
    wait_registered(gattd, "main")
    wait_registered(gattd, "beacon")
    assert adverts(standin) == ["/org/gattd/adv/beacon", "/org/gattd/adv/main"]
    result = gattctl("advertise", "off")
    assert (result.returncode, result.stdout) == (0, "main: off\nbeacon: off\n")
    assert adverts(standin) == []
    assert status_json(gattctl)["advertisements"] == {"main": "disabled", "beacon": "disabled"}
    assert gattctl("advertise", "on", "main").stdout == "main: on\n"
    wait_registered(gattd, "main", count=2)
    assert adverts(standin) == ["/org/gattd/adv/main"]
    gattd.restarted = True
    gattd.stop()
    standin.call("WaitForApplications", dbus.UInt32(0), WAIT_MS)
    g2 = start_gattd("control.json", state_dir=gattd.state_dir)
    wait_registered(g2, "main")
    assert status_json(gattctl)["advertisements"] == {"main": "advertising", "beacon": "disabled"}


def test_status_shows_adapter_registration_and_subscriptions(gattd, standin, gattctl):
    standin.call("Subscribe", path_of(standin, HR_MEASUREMENT), DEVICE)
    status = status_json(gattctl)
    assert (status["adapter"], status["registered"], status["subscriptions"], status["lastError"]) == \
        ("hci0", True, 1, None)
    text = gattctl("status").stdout
    assert "adapter:        hci0\n" in text and "registered:     yes (serving on hci0)\n" in text
    assert "subscriptions:  1\n" in text and "last error:     (none)\n" in text


def test_without_the_name_gatt_is_served_and_gattctl_says_unreachable(private_bus, standin, start_gattd, gattctl):
    squatter = private_bus.connect()
    assert squatter.request_name("org.gattd", dbus.bus.NAME_FLAG_DO_NOT_QUEUE) == dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER
    g = start_gattd("control.json")
    assert g.child.wait_for_line("serving GATT without the control API", 10)
    standin.call("WaitForApplication", WAIT_MS)
    assert bytes(standin.call("Read", path_of(standin, DEVICE_LABEL), dbus.UInt16(0), MTU, DEVICE)) == b"hello"
    squatter.release_name("org.gattd")
    result = gattctl("status")
    assert result.returncode == 1 and "gattd is not reachable" in result.stderr
    assert g.alive()


def test_values_show_as_the_definition_types_them(start_gattd, standin, gattctl, tmp_path):
    config = tmp_path / "typed.json"
    config.write_text(json.dumps({"version": 1, "services": [{"id": "s", "uuid": "181A", "characteristics": [
        {"id": "temperature", "uuid": "2A6E", "flags": ["read"], "value": {"int16": 2137}},
        {"id": "level", "uuid": "2A19", "flags": ["read"], "value": {"uint8": 100}, "persist": False},
        {"id": "raw", "uuid": "2A58", "flags": ["read"], "value": {"hex": "5908"}}]}]}))
    g = start_gattd(str(config))
    standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    lines = gattctl("list").stdout.splitlines()
    assert lines[0].split()[-2:] == ["0x5908", "2137"], "an int16 of 2137 shows as 2137"
    assert lines[1].split()[-2:] == ["0x64", "100"], lines
    assert lines[2].split()[-2:] == ["0x5908", '"Y\\u{8}"'], "no type: the bytes as text"
    assert len({line.index("0x") for line in lines}) == 1, "the value column lines up"
    assert gattctl("get", "temperature").stdout.splitlines() == ["hex    0x5908", 'utf8   "Y\\u{8}"', "int16  2137"]
    item = json.loads(gattctl("get", "temperature", "--json").stdout)
    assert (item["type"], item["typed"], item["hex"]) == ("int16", "2137", "5908")
