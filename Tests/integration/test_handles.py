# SPDX-License-Identifier: MIT
"""Stable ATT handles: gattd exports Handle, keeps what bluetoothd wrote back with its
state, and asks for the same handles after a gattd restart, a bluetoothd restart and a
reload (docs/bluez-contract.md §10). The stand-in places attributes as the emulated
bluetoothd does: a service whose Handle is 0 after the highest handle used so far, a
requested one where asked; characteristics and descriptors by number (5.66) or by slot
(5.82)."""

import json
import os
import signal

import dbus
import pytest

from harness import Standin
from fixtures import print_on_failure, read, wait_until
from conftest import run_gattctl

WAIT_MS = dbus.UInt32(10000)
BASE = "12345678-1234-5678-1234-56789abc%04x"


def uuid(n):
    return BASE % n


def definition(grown=False):
    """Two services; grown adds a service before them and a characteristic before
    another in the last one."""
    services = [
        {"id": "first", "uuid": uuid(0x100), "characteristics": [
            {"id": "a", "uuid": uuid(0x101), "flags": ["read", "notify"], "value": {"utf8": "a"}},
            {"id": "b", "uuid": uuid(0x102), "flags": ["read"], "value": {"utf8": "b"},
             "descriptors": [{"id": "b-desc", "uuid": "2901", "flags": ["read"], "value": {"utf8": "about b"}}]}]},
        {"id": "second", "uuid": uuid(0x200), "characteristics": [
            {"id": "c", "uuid": uuid(0x201), "flags": ["read", "write"], "value": {"utf8": "c"}},
            {"id": "d", "uuid": uuid(0x202), "flags": ["read"], "value": {"utf8": "d"}}]},
    ]
    if grown:
        services.insert(0, {"id": "added", "uuid": uuid(0x300), "characteristics": [
            {"id": "e", "uuid": uuid(0x301), "flags": ["read"], "value": {"utf8": "e"}}]})
        services[2]["characteristics"].insert(1, {"id": "f", "uuid": uuid(0x203), "flags": ["read"],
                                                  "value": {"utf8": "f"}})
    return {"version": 1, "adapter": "hci0", "services": services}


def write_config(path, document):
    with open(path, "w") as f:
        json.dump(document, f)


def handles(standin):
    """UUID -> handle of every attribute the stand-in holds (the value's for a characteristic)."""
    return {str(a["uuid"]): int(a["handle"]) for a in standin.call("Attributes")}


def registered(standin, owner_before=None):
    if owner_before is not None:
        wait_until(lambda: all(str(o) != owner_before for o, _ in standin.call("Applications")), 10,
                   "the stand-in to drop the previous application")
    owner, _ = standin.call("WaitForApplication", WAIT_MS)
    return str(owner)


@pytest.fixture(params=["5.66", "healthy-5.82"])
def emulated(private_bus, tmp_path, request):
    log_path = str(tmp_path / "standin.log")
    sd = Standin(private_bus, log_path=log_path, emulate=request.param)
    yield sd
    sd.stop()
    print_on_failure(request, "stand-in log", log_path)


def test_handles_stay_across_restart_bluetoothd_restart_and_reload(start_gattd, emulated, tmp_path):
    standin = emulated
    config = str(tmp_path / "gatt.json")
    state = str(tmp_path / "state")
    write_config(config, definition())
    g = start_gattd(config, state)
    owner = registered(standin)
    first = handles(standin)
    assert len(set(first.values())) == len(first)
    path = os.path.join(state, "state.json")
    wait_until(lambda: os.path.exists(path), 10, "the handles to be saved")
    with open(path) as f:
        saved = json.load(f)
    assert saved["version"] == 3
    assert saved["handles"]["characteristics"]["b"] == first[uuid(0x102)], "the written-back handle is saved"
    assert saved["handles"]["descriptors"]["b-desc"] == first["00002901-0000-1000-8000-00805f9b34fb"]

    # gattd restarts: bluetoothd would put a Handle-0 service after everything used so far.
    g.stop()
    g = start_gattd(config, state)
    owner = registered(standin, owner)
    assert handles(standin) == first
    assert g.child.wait_for_line("the state file", 0.1) is None

    # bluetoothd restarts (its database starts afresh): the same handles.
    standin.restart()
    owner = registered(standin)
    assert handles(standin) == first

    # A reload adding a service before the others and a characteristic before another.
    write_config(config, definition(grown=True))
    g.child.proc.send_signal(signal.SIGHUP)
    # One application per service: the new one registered, the changed one replaced.
    wait_until(lambda: {uuid(0x301), uuid(0x203), uuid(0x200)} <= set(handles(standin)), 10, "the grown tree")
    after = handles(standin)
    for attribute, handle in first.items():
        assert after[attribute] == handle, "%s moved" % attribute
    newest = max(first.values())
    assert after[uuid(0x203)] > newest and after[uuid(0x301)] > newest, "new attributes go after the existing ones"
    for n, text in [(0x101, b"a"), (0x102, b"b"), (0x201, b"c"), (0x202, b"d"), (0x203, b"f"), (0x301, b"e")]:
        assert read(standin, uuid(n)) == text


def test_gattctl_list_shows_handles(start_gattd, standin, private_bus, tmp_path):
    def gattctl(*args):
        return run_gattctl(private_bus, *args)

    config = str(tmp_path / "gatt.json")
    write_config(config, definition())
    start_gattd(config)
    registered(standin)
    placed = handles(standin)
    items = [json.loads(line) for line in gattctl("list", "--json").stdout.splitlines()]
    assert {i["id"]: i["handle"] for i in items} == {
        "a": placed[uuid(0x101)], "b": placed[uuid(0x102)], "c": placed[uuid(0x201)], "d": placed[uuid(0x202)]}
    text = gattctl("list").stdout.splitlines()
    assert text[0].split()[2] == "0x%04x" % placed[uuid(0x101)]


@pytest.mark.parametrize("emulate", ["5.66", "healthy-5.82"])
def test_pinned_handles_are_where_the_definition_says(start_gattd, private_bus, tmp_path, emulate):
    standin = Standin(private_bus, log_path=str(tmp_path / "standin.log"), emulate=emulate)
    try:
        document = definition()
        document["services"][1]["handle"] = "0x0200"
        document["services"][1]["characteristics"][1]["handle"] = 0x0202
        config = str(tmp_path / "gatt.json")
        write_config(config, document)
        start_gattd(config)
        registered(standin)
        placed = handles(standin)
        assert placed[uuid(0x200)] == 0x0200
        assert placed[uuid(0x202)] == 0x0202, "the pinned characteristic first in its service"
        assert placed[uuid(0x201)] == 0x0204
        assert placed[uuid(0x100)] == 0x0205, "an unpinned service goes after the pinned ones"
        assert read(standin, uuid(0x202)) == b"d"
    finally:
        standin.stop()


def test_bad_handles_in_the_state_file_are_dropped_alone(start_gattd, standin, tmp_path):
    config = str(tmp_path / "gatt.json")
    state = tmp_path / "state"
    state.mkdir()
    write_config(config, definition())
    (state / "state.json").write_text(json.dumps({
        "version": 3,
        "characteristics": {"c": {"uuid": uuid(0x201), "value": "6b657074", "minLength": 0, "maxLength": 512}},
        "handles": {"services": {"first": 70000}}}))
    g = start_gattd(config, str(state))
    registered(standin)
    line = g.child.wait_for_line("attribute handles are unusable", 10)
    assert line is not None and "handles.services" in line and "70000" in line, line
    assert read(standin, uuid(0x201)) == b"kept", "the saved value survives"
    assert not any(n.startswith("state.json.damaged") for n in os.listdir(str(state))), "nothing moved aside"


def test_a_taken_range_falls_back_to_bluetoothds_choice(start_gattd, standin, tmp_path):
    """Remembered handles inside bluetoothd's own GAP/GATT range: refused, so gattd says so
    and registers again letting bluetoothd choose, and remembers that choice."""
    config = str(tmp_path / "gatt.json")
    state = tmp_path / "state"
    state.mkdir()
    write_config(config, definition())
    (state / "state.json").write_text(json.dumps({
        "version": 3, "handles": {"services": {"first": 2, "second": 40}}}))
    g = start_gattd(config, str(state))
    # One application per service: "second" keeps its handle, "first" is registered again.
    assert g.child.wait_for_line("refused the application at the requested handles", 10) is not None
    assert len(standin.call("WaitForApplications", dbus.UInt32(2), dbus.UInt32(10000))) == 2
    placed = handles(standin)
    assert placed[uuid(0x100)] >= 0x000c
    wait_until(lambda: json.load(open(str(state / "state.json"))).get("handles", {}).get("services", {}).get("first")
               == placed[uuid(0x100)], 10, "the chosen handles to be saved")


def test_only_bluetoothd_may_set_handle(start_gattd, standin, private_bus, tmp_path):
    """Handle is read-write for bluetoothd's write-back; any other caller is refused, so
    nobody else can make gattd remember (and later request) wrong handles."""
    config = str(tmp_path / "gatt.json")
    write_config(config, definition())
    start_gattd(config)
    owner = registered(standin)
    before = handles(standin)
    bus = private_bus.connect()
    service = bus.get_object(owner, "/org/gattd/app/first/first", introspect=False)
    props = dbus.Interface(service, "org.freedesktop.DBus.Properties")
    assert int(props.Get("org.bluez.GattService1", "Handle")) == before[uuid(0x100)]
    with pytest.raises(dbus.DBusException) as refused:
        props.Set("org.bluez.GattService1", "Handle", dbus.UInt16(0x0500), signature="ssv")
    assert refused.value.get_dbus_name() == "org.freedesktop.DBus.Error.AccessDenied"
    assert int(props.Get("org.bluez.GattService1", "Handle")) == before[uuid(0x100)]
