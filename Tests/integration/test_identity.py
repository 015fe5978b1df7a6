# SPDX-License-Identifier: MIT
"""One name per central (docs/control-api.md, "How centrals are named"): phones use
resolvable private addresses (RPAs).

bluetoothd keeps a phone that bonds over an RPA at `dev_<that RPA>` and only changes its
`Address`/`AddressType` to the identity (one PropertiesChanged); a phone that pairs again
with a new IRK leaves two Device1 objects with one `Address` (docs/bluez-contract.md,
"Private addresses"). The stand-in does both (`AddDevice`, `SetDeviceIdentity`). Every
surface must name the central by the `Address` bluetoothd gives, never by text cut from the
object path, and a program that follows the events must never meet an address it was not
told about.
"""

import json
import os
import re

import dbus
import pytest

from conftest import REPO, gattctl_binary, run_gattctl, watch_event, watch_events
from fixtures import path_of, wait_until, write
from harness import Child

WAIT_MS = dbus.UInt32(10000)
STREAM = "12345678-1234-5678-1234-56789abc8001"
CMD = "12345678-1234-5678-1234-56789abc8004"
RPA = "6E:0D:A0:33:2C:6E"           # the private address the phone first connected from
RPA_PATH = "/org/bluez/hci0/dev_6E_0D_A0_33_2C_6E"
IDENTITY = "00:AA:01:01:00:01"      # its identity address, given when it bonds
RPA2 = "41:9E:0C:94:B8:B3"          # where it comes from after a re-pair with a new IRK
RPA2_PATH = "/org/bluez/hci0/dev_41_9E_0C_94_B8_B3"


@pytest.fixture
def gattd(start_gattd, standin):
    g = start_gattd("sockets.json")
    standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    standin.call("SetAcquireMode", "per-device")
    assert g.child.wait_for_line("model=targeted", 10)
    yield g
    assert g.alive(), "gattd exited during the test"


@pytest.fixture
def manager(private_bus):
    bus = private_bus.connect()
    return dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")


def sockets(standin, path):
    return {str(d): int(n) for d, _, n in standin.call("Sockets", path, "notify")}


class Tracker:
    """What a program knows from the events alone: the addresses of the connected centrals.
    Fails when an event names a central by an address it was never told."""

    def __init__(self):
        self.connected = set()

    def follow(self, event):
        kind = event.get("event")
        if kind == "connected":
            self.connected.add(event["address"])
        elif kind == "address-changed":
            assert event["old-address"] in self.connected, event
            self.connected.discard(event["old-address"])
            self.connected.add(event["address"])
        elif kind == "disconnected":
            assert event["address"] in self.connected, event
            self.connected.discard(event["address"])
        elif kind == "written" and event.get("address"):
            assert event["address"] in self.connected, event


def events_of(watch):
    out = []
    for line in watch.out.lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def test_a_phone_that_bonds_over_a_private_address_has_one_name_everywhere(gattd, standin, manager, private_bus):
    w = watch_events(private_bus)
    try:
        # First contact from an RPA: a Device1 at dev_<RPA>, AddressType random.
        assert str(standin.call("AddDevice", "hci0", RPA, RPA, "random", True, False)) == RPA_PATH
        seen = watch_event(w, event="connected")
        assert seen == {"event": "connected", "address": RPA, "address-type": "random", "device": RPA_PATH}
        [central] = manager.ListCentrals()
        assert (str(central["Address"]), str(central["AddressType"]), str(central["Device"])) == \
            (RPA, "random", RPA_PATH)
        stream = path_of(standin, STREAM)
        standin.call("Subscribe", stream, RPA_PATH)
        assert int(standin.call("WaitForSockets", stream, "notify", dbus.UInt32(1), WAIT_MS)) == 1
        write(standin, CMD, b"\x01", device=RPA_PATH)
        assert watch_event(w, event="written", hex="01")["address"] == RPA

        # It bonds: bluetoothd changes Address to the identity, the path stays.
        standin.call("SetDeviceIdentity", RPA_PATH, IDENTITY, "public", True)
        changed = watch_event(w, event="address-changed")
        assert changed == {"event": "address-changed", "address": IDENTITY, "address-type": "public",
                           "old-address": RPA, "old-address-type": "random", "device": RPA_PATH}
        [central] = manager.ListCentrals()
        assert (str(central["Address"]), str(central["AddressType"])) == (IDENTITY, "public")
        assert [str(s) for s in central["Subscribed"]] == ["stream"]
        [bond] = manager.ListBonds()
        assert (str(bond["Address"]), str(bond["Device"]), bool(bond["Connected"])) == (IDENTITY, RPA_PATH, True)

        # A value for it alone, by its identity: reaches its socket (found by its object).
        out = run_gattctl(private_bus, "set", "stream", "--hex", "0a0b0c0d", "--to", IDENTITY.lower())
        assert out.returncode == 0, out.stderr
        values = standin.call("WaitForNotifications", stream, dbus.UInt32(1), WAIT_MS)
        assert bytes(values[0]) == b"\x0a\x0b\x0c\x0d" and sockets(standin, stream) == {RPA_PATH: 1}
        # Its old private address names nobody any more (and reaches nobody).
        out = run_gattctl(private_bus, "set", "stream", "--hex", "01020304", "--to", RPA)
        assert out.returncode == 5 and "%s is not connected" % RPA in out.stderr, out.stderr

        # A write is reported with the identity; gattctl's text line too.
        write(standin, CMD, b"\x02", device=RPA_PATH)
        written = watch_event(w, event="written", hex="02")
        assert (written["address"], written["device"]) == (IDENTITY, RPA_PATH)

        # Disconnect by identity; the event names the identity, which was announced.
        out = run_gattctl(private_bus, "disconnect", IDENTITY)
        assert out.returncode == 0, out.stderr
        gone = watch_event(w, event="disconnected")
        assert (gone["address"], gone["address-type"], gone["device"]) == (IDENTITY, "public", RPA_PATH)
        # It returns from a new RPA: the kernel resolves it onto the object of its bond.
        standin.call("SetPathConnected", RPA_PATH, True)
        back = watch_event(w, event="connected", address=IDENTITY)
        assert (back["address-type"], back["device"]) == ("public", RPA_PATH)
        standin.call("SetPathConnected", RPA_PATH, False)
        wait_until(lambda: len([e for e in events_of(w) if e.get("event") == "disconnected"]) == 2, 10,
                   "the second disconnection")
    finally:
        w.stop()
    tracker = Tracker()
    events = events_of(w)
    for event in events:
        tracker.follow(event)
    assert tracker.connected == set()
    assert [e["event"] for e in events if e["event"] in ("connected", "address-changed", "disconnected")] == \
        ["connected", "address-changed", "disconnected", "connected", "disconnected"]


def test_a_phone_that_pairs_again_with_a_new_irk_is_one_bond(gattd, standin, manager, private_bus):
    # The old bond: its object at the first RPA, not connected.
    standin.call("AddDevice", "hci0", RPA, IDENTITY, "public", False, True)
    # It forgot its keys and paired again from a new RPA with a new IRK: a second object
    # with the same identity address.
    standin.call("AddDevice", "hci0", RPA2, RPA2, "random", True, False)
    standin.call("SetDeviceIdentity", RPA2_PATH, IDENTITY, "public", True)

    def one_bond():
        bonds = list(manager.ListBonds())
        return len(bonds) == 1 and bool(bonds[0]["Connected"])
    wait_until(one_bond, 10, "one bond for the identity, the connected object")
    [bond] = manager.ListBonds()
    assert (str(bond["Address"]), str(bond["Device"])) == (IDENTITY, RPA2_PATH)
    listed = json.loads(run_gattctl(private_bus, "bonds", "--json").stdout)
    assert [(b["address"], b["addressType"], b["connected"]) for b in listed] == [(IDENTITY, "public", True)]
    # RemoveBond removes both objects of the identity, the one standing for it last.
    out = run_gattctl(private_bus, "bonds", "remove", IDENTITY)
    assert out.returncode == 0 and out.stdout.strip() == IDENTITY + ": removed", out.stderr
    removed = [re.search(r"device (\S+) removed by ", str(line)).group(1) for line in standin.call("Log")
               if " removed by " in str(line)]
    assert removed == [RPA_PATH, RPA2_PATH]
    wait_until(lambda: list(manager.ListBonds()) == [], 10, "the bond list to empty")


def test_a_re_pair_where_the_keys_stay_on_the_older_object_is_one_bonded_central(gattd, standin, manager, private_bus):
    """bluetoothd before 5.80 files the new keys under the older object (found first by
    address) while the newer carries the link, `Paired` false (docs/bluez-contract.md §12):
    still one bond, bonded and connected, named by the connected object; the central is
    listed bonded; gattd logs the two objects and removes neither."""
    standin.call("AddDevice", "hci0", IDENTITY, IDENTITY, "public", False, True)
    standin.call("AddDevice", "hci0", RPA2, RPA2, "random", True, False)
    standin.call("SetDeviceIdentity", RPA2_PATH, IDENTITY, "public", False)
    older = "/org/bluez/hci0/dev_00_AA_01_01_00_01"

    def one_bond():
        bonds = list(manager.ListBonds())
        return len(bonds) == 1 and bool(bonds[0]["Connected"])
    wait_until(one_bond, 10, "one bond for the identity, the connected object")
    [bond] = manager.ListBonds()
    assert (str(bond["Address"]), str(bond["Device"]), bool(bond["Bonded"]), bool(bond["Paired"])) == (
        IDENTITY, RPA2_PATH, True, True)
    [central] = manager.ListCentrals()
    assert (str(central["Address"]), str(central["Device"]), bool(central["Bonded"])) == (IDENTITY, RPA2_PATH, True)
    line = gattd.child.wait_for_line("central paired again (new IRK)", 10)
    assert line is not None and IDENTITY in line and RPA2_PATH in line and older in line, line
    assert not [x for x in standin.call("Log") if " removed by " in str(x)], "gattd removed an object on its own"


def test_handlers_and_hooks_get_the_address_beside_the_path(start_gattd, standin, private_bus, tmp_path):
    """A handler's request has `address` beside `device`; a hook gets GATT_DEVICE (the address)
    and GATT_DEVICE_PATH (the object)."""
    written = tmp_path / "hook.out"
    config = {
        "version": 1,
        "services": [{"id": "s", "uuid": "12345678-1234-5678-1234-56789abc6100", "characteristics": [
            {"id": "log", "uuid": "12345678-1234-5678-1234-56789abc6102", "flags": ["read", "write"],
             "maxLength": 8, "persist": False,
             "onWrite": {"argv": ["/bin/sh", "-c", "printf '%s %s' \"$GATT_DEVICE\" \"$GATT_DEVICE_PATH\" > \"$1\"",
                                  "sh", str(written)]}},
            {"id": "handled", "uuid": "12345678-1234-5678-1234-56789abc6103", "flags": ["read", "write"],
             "maxLength": 8, "persist": False, "handler": {"fallback": "error", "error": "0x81"}},
        ]}],
    }
    path = tmp_path / "identity-hooks.json"
    path.write_text(json.dumps(config))
    g = start_gattd(str(path))
    standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    standin.call("AddDevice", "hci0", RPA, RPA, "random", True, False)
    standin.call("SetDeviceIdentity", RPA_PATH, IDENTITY, "public", True)
    write(standin, "12345678-1234-5678-1234-56789abc6102", b"x", device=RPA_PATH)
    wait_until(lambda: written.exists() and written.read_text() != "", 10, "the hook's file")
    assert written.read_text() == "%s %s" % (IDENTITY, RPA_PATH)

    program = Child(["/usr/bin/python3", os.path.join(REPO, "Tests", "integration", "handler_program.py"),
                     "--ids", "handled"],
                    env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address})
    try:
        assert program.wait_for_line("registered", 10)
        write(standin, "12345678-1234-5678-1234-56789abc6103", b"y", device=RPA_PATH)
        line = program.wait_for_line("write handled", 10)
        assert line and line.endswith(" address=%s device=%s" % (IDENTITY, RPA_PATH)), line
    finally:
        program.stop()


def test_pairing_events_and_decisions_name_the_address_bluetoothd_gives(start_gattd, standin, private_bus):
    from test_security import PendingAgentCall, serving
    g = start_gattd("security-nc.json")
    serving(g, standin)
    standin.call("AddDevice", "hci0", RPA, RPA, "random", True, False)
    w = watch_events(private_bus)
    try:
        call = PendingAgentCall(private_bus, device=RPA_PATH)
        seen = watch_event(w, event="confirm")
        assert seen == {"event": "confirm", "passkey": "004321", "address": RPA, "device": RPA_PATH}
        out = run_gattctl(private_bus, "pairing", "confirm", RPA.lower())
        assert out.returncode == 0, out.stderr
        assert call.result() == []
    finally:
        w.stop()


def test_gattctl_watch_text_lines_name_the_address(gattd, standin, private_bus):
    watch = Child([gattctl_binary(), "watch"], env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address})
    try:
        assert watch.wait_for_line("watching", 10)
        standin.call("AddDevice", "hci0", RPA, RPA, "random", True, False)
        assert watch.wait_for_line("connected", 10) == \
            "connected %s address-type=random device=%s" % (RPA, RPA_PATH)
        standin.call("SetDeviceIdentity", RPA_PATH, IDENTITY, "public", True)
        assert watch.wait_for_line("address-changed", 10) == \
            "address-changed %s address-type=public old-address=%s old-address-type=random device=%s" % (
                IDENTITY, RPA, RPA_PATH)
        write(standin, CMD, b"\x2a", device=RPA_PATH)
        assert watch.wait_for_line("written", 10) == \
            'written cmd 2a "*" address=%s device=%s' % (IDENTITY, RPA_PATH)
    finally:
        watch.stop()
