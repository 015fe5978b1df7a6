# SPDX-License-Identifier: MIT
"""Several centrals at once: the 5.66 double AcquireNotify, values sent to
chosen centrals only, and the connected centrals in the control API and gattctl.

The stand-in plays bluetoothd's two socket models (Tests/standin/acquired.py): "shared"
is 5.66 exactly, down to the second AcquireNotify when two centrals subscribe at once;
"per-device" is 5.82, whose adapter shows the Adapter1 properties gattd reads the model
from (docs/bluez-contract.md, "Sockets").
"""

import json
import os
import struct
import subprocess

import dbus
import pytest

from conftest import gattctl_binary
from fixtures import path_of, read, write
from harness import DEVICE, DEVICE2, Child

WAIT_MS = dbus.UInt32(10000)
STREAM = "12345678-1234-5678-1234-56789abc8001"
CMD = "12345678-1234-5678-1234-56789abc8004"
PLAIN = "12345678-1234-5678-1234-56789abc8005"
ADDRESS = "00:11:22:33:44:55"     # DEVICE
ADDRESS2 = "66:77:88:99:AA:BB"    # DEVICE2
STRANGER = "12:34:56:78:9A:BC"    # never connected


@pytest.fixture
def gattd(start_gattd, standin):
    g = start_gattd("sockets.json")
    standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    yield g
    assert g.alive(), "gattd exited during the test"


@pytest.fixture
def manager(private_bus):
    bus = private_bus.connect()
    return dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")


def gattctl(private_bus, *args):
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address)
    return subprocess.run([gattctl_binary(), *args], capture_output=True, text=True, env=env, timeout=30)


def wait_sockets(standin, path, count):
    return int(standin.call("WaitForSockets", path, "notify", dbus.UInt32(count), WAIT_MS))


def connect(standin, *addresses):
    return [str(standin.call("SetDeviceConnected", "hci0", a, True)) for a in addresses]


def per_device(standin, gattd):
    standin.call("SetAcquireMode", "per-device")
    assert gattd.child.wait_for_line("model=targeted", 10)


def notifying(manager, id):
    return bool({str(e["Id"]): e for e in manager.ListCharacteristics()}[id]["Notifying"])


# -- item 4: the 5.66 double acquire -------------------------------------------------------

def test_two_centrals_subscribing_at_once_on_5_66_get_each_value_once(gattd, standin, manager, private_bus):
    stream = path_of(standin, STREAM)
    # Both CCC writes before either AcquireNotify is answered: 5.66 acquires twice.
    assert bytes(standin.call("SubscribeAtOnce", stream, dbus.Array([DEVICE, DEVICE2], signature="o"))) == b"\0\0"
    assert gattd.child.wait_for_line("closed the one it lost", 10)
    calls = [str(o["device"]) for m, p, o in standin.call("AcquireCalls") if str(p) == stream]
    assert calls == [DEVICE, DEVICE2]
    # One socket left on either side, so no value can go out twice.
    assert wait_sockets(standin, stream, 1) == 1
    assert int({str(e["Id"]): e for e in manager.ListCharacteristics()}["stream"]["NotifySockets"]) == 1
    for n in range(1, 7):
        manager.SetValue("stream", dbus.ByteArray(struct.pack("<I", n)))
        values = standin.call("WaitForNotifications", stream, dbus.UInt32(n), WAIT_MS)
    assert [struct.unpack("<I", bytes(v))[0] for v in values] == [1, 2, 3, 4, 5, 6]
    assert wait_sockets(standin, stream, 1) == 1
    # Both leave: the subscription ends (by a hang-up or by StopNotify, as 5.66 chooses).
    standin.call("Unsubscribe", stream, DEVICE)
    standin.call("Unsubscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, 0) == 0
    assert gattd.child.wait_for_line("unsubscribed", 10)
    assert not notifying(manager, "stream")
    out = gattctl(private_bus, "list")
    assert out.returncode == 0, out.stderr
    line = next(l for l in out.stdout.splitlines() if l.split()[0] == "stream")
    assert "subscribed" not in line, line
    assert len(standin.call("Notifications", stream)) == 6


def test_values_keep_their_order_across_the_5_66_socket_switch(gattd, standin, manager):
    stream = path_of(standin, STREAM)
    assert standin.call("Subscribe", stream, DEVICE) == 0
    assert wait_sockets(standin, stream, 1) == 1
    # bluetoothd is busy: value 1 waits unread in the first socket when the second
    # AcquireNotify (a CCC write that raced the first answer) replaces it.
    standin.call("PauseNotifyReads", stream, True)
    manager.SetValue("stream", dbus.ByteArray(struct.pack("<I", 1)))
    assert standin.call("SubscribeRacing", stream, DEVICE2) == 0
    assert wait_sockets(standin, stream, 2) == 2
    assert gattd.child.wait_for_line("wait until bluetoothd reads the one it lost", 10)
    manager.SetValue("stream", dbus.ByteArray(struct.pack("<I", 2)))
    # Its loop then reads the new socket before the forgotten one (5.66's order): value 2
    # must not be there yet. gattd closes the old socket once it is read empty.
    standin.call("PauseNotifyReads", stream, False)
    values = standin.call("WaitForNotifications", stream, dbus.UInt32(2), WAIT_MS)
    assert [struct.unpack("<I", bytes(v))[0] for v in values] == [1, 2]
    assert wait_sockets(standin, stream, 1) == 1


def test_per_device_sockets_are_not_taken_for_lost_ones(gattd, standin, manager):
    per_device(standin, gattd)
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, 2) == 2
    manager.SetValue("stream", dbus.ByteArray(b"\x07\x00\x00\x00"))
    standin.call("WaitForNotifications", stream, dbus.UInt32(2), WAIT_MS)
    assert sorted(int(n) for _, _, n in standin.call("Sockets", stream, "notify")) == [1, 1]


# -- item 2: values for chosen centrals -------------------------------------------------------

def test_a_value_for_chosen_centrals_reaches_only_them(gattd, standin, manager, private_bus):
    per_device(standin, gattd)
    connect(standin, ADDRESS, ADDRESS2)
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, 2) == 2
    stored = read(standin, STREAM)

    out = gattctl(private_bus, "set", "stream", "--hex", "0a0b0c0d", "--to", ADDRESS2.lower())
    assert out.returncode == 0, out.stderr
    values = standin.call("WaitForNotifications", stream, dbus.UInt32(1), WAIT_MS)
    assert bytes(values[0]) == b"\x0a\x0b\x0c\x0d"
    counts = {str(d): int(n) for d, _, n in standin.call("Sockets", stream, "notify")}
    assert counts == {DEVICE: 0, DEVICE2: 1}
    assert read(standin, STREAM) == stored          # not stored: others neither get nor read it

    manager.SetValueWithOptions("stream", dbus.ByteArray(b"\x01\x02\x03\x04"),
                                dbus.Dictionary({"centrals": dbus.Array([ADDRESS, ADDRESS2], signature="s")},
                                                signature="sv"))
    standin.call("WaitForNotifications", stream, dbus.UInt32(3), WAIT_MS)
    counts = {str(d): int(n) for d, _, n in standin.call("Sockets", stream, "notify")}
    assert counts == {DEVICE: 1, DEVICE2: 2}
    # Without centrals it is SetValue: stored and sent to every subscriber.
    manager.SetValueWithOptions("stream", dbus.ByteArray(b"\x05\x00\x00\x00"), dbus.Dictionary({}, signature="sv"))
    standin.call("WaitForNotifications", stream, dbus.UInt32(5), WAIT_MS)
    assert read(standin, STREAM) == b"\x05\x00\x00\x00"


def test_the_writer_alone_gets_the_answer(gattd, standin, manager, private_bus):
    """Request/response over notify: a program hears who wrote (ValueWritten's device, or a
    handler's request `device`) and answers that central only."""
    per_device(standin, gattd)
    connect(standin, ADDRESS, ADDRESS2)
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, 2) == 2
    w = Child([gattctl_binary(), "watch", "--json"], env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address})
    try:
        assert w.wait_for_line("watching", 10)
        write(standin, CMD, b"\x2a", device=DEVICE2)
        line = w.out.wait_for(lambda l: '"event":"written"' in l.replace(" ", ""), 10)
        assert line is not None
    finally:
        w.stop()
    written = json.loads(line)
    assert written["id"] == "cmd" and written["hex"] == "2a", written
    writer = written["device"]
    assert writer == DEVICE2
    address = writer.rsplit("/dev_", 1)[1].replace("_", ":")
    manager.SetValueWithOptions("stream", dbus.ByteArray(b"\x2a\x00\x00\x00"),
                                dbus.Dictionary({"centrals": dbus.Array([address], signature="s")}, signature="sv"))
    standin.call("WaitForNotifications", stream, dbus.UInt32(1), WAIT_MS)
    assert {str(d): int(n) for d, _, n in standin.call("Sockets", stream, "notify")} == {DEVICE: 0, DEVICE2: 1}


def refused(private_bus, *args):
    out = gattctl(private_bus, "set", *args)
    assert out.returncode != 0, out.stdout
    return out.returncode, out.stderr.strip()


def test_chosen_centrals_are_refused_where_bluetoothd_cannot_target(gattd, standin, private_bus):
    connect(standin, ADDRESS, ADDRESS2)
    stream = path_of(standin, STREAM)
    plain = path_of(standin, PLAIN)
    # 5.66: one shared socket; a value on it reaches every subscriber.
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, 1) == 1
    code, err = refused(private_bus, "stream", "--hex", "01020304", "--to", ADDRESS)
    assert code == 5 and "shares one socket among all subscribers" in err, err
    # The signal path: PropertiesChanged goes to every subscriber.
    standin.call("Subscribe", plain, DEVICE)
    code, err = refused(private_bus, "plain", "--hex", "01", "--to", ADDRESS)
    assert code == 5 and "signal path" in err, err
    assert len(standin.call("Notifications", stream)) == 0
    assert len(standin.call("Notifications", plain)) == 0

    standin.call("Unsubscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, 0) == 0
    per_device(standin, gattd)
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, 1) == 1
    # Connected but not subscribed; not connected at all: nothing sent to anyone.
    code, err = refused(private_bus, "stream", "--hex", "01020304", "--to", "%s,%s" % (ADDRESS, ADDRESS2))
    assert code == 5 and "%s is not subscribed to stream through a socket of its own" % ADDRESS2 in err, err
    code, err = refused(private_bus, "stream", "--hex", "01020304", "--to", STRANGER)
    assert code == 5 and "%s is not connected" % STRANGER in err, err
    assert all(int(n) == 0 for _, _, n in standin.call("Sockets", stream, "notify"))
    # Bad input, named.
    code, err = refused(private_bus, "stream", "--hex", "01020304", "--to", "00:11:22:33:44")
    assert code == 5 and '"00:11:22:33:44" is not an address' in err, err
    code, err = refused(private_bus, "stream", "--hex", "01020304", "--to", ADDRESS + ",")
    assert code == 5 and '"" is not an address' in err, err
    code, err = refused(private_bus, "samples", "--hex", "01", "--to", ADDRESS)
    assert code == 4 and "samples takes 6...6 bytes, got 1" in err, err
    code, err = refused(private_bus, "nosuch", "--hex", "01", "--to", ADDRESS)
    assert code == 3, err
    bus = private_bus.connect()
    manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    with pytest.raises(dbus.exceptions.DBusException) as error:
        manager.SetValueWithOptions("stream", dbus.ByteArray(b"\x01\x02\x03\x04"),
                                    dbus.Dictionary({"to": dbus.String(ADDRESS)}, signature="sv"))
    assert error.value.get_dbus_name() == "org.freedesktop.DBus.Error.InvalidArgs"
    assert 'unknown option "to"' in error.value.get_dbus_message()
    assert all(int(n) == 0 for _, _, n in standin.call("Sockets", stream, "notify"))


# -- item 1: the centrals ------------------------------------------------------------------------

def test_list_and_disconnect_centrals(gattd, standin, manager, private_bus):
    per_device(standin, gattd)
    assert list(manager.ListCentrals()) == []
    device, device2 = connect(standin, ADDRESS, ADDRESS2)
    standin.call("SetDeviceBonded", "hci0", ADDRESS2, True)
    standin.call("SetLinkMTU", dbus.UInt16(185))
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, 1) == 1
    centrals = {str(c["Address"]): c for c in manager.ListCentrals()}
    assert sorted(centrals) == [ADDRESS, ADDRESS2]
    second = centrals[ADDRESS2]
    assert str(second["Device"]) == device2
    assert bool(second["Bonded"]) and not bool(centrals[ADDRESS]["Bonded"])
    assert int(second["MTU"]) == 185 and int(second["MaxUpdateLength"]) == 182
    assert "MTU" not in centrals[ADDRESS]
    assert [str(i) for i in second["Subscribed"]] == ["stream"]
    assert list(centrals[ADDRESS]["Subscribed"]) == []
    assert int(second["ConnectedSince"]) > 1_600_000_000

    out = gattctl(private_bus, "centrals")
    assert out.returncode == 0, out.stderr
    lines = {l.split()[0]: l for l in out.stdout.splitlines()}
    assert lines[ADDRESS2].startswith(ADDRESS2 + " - mtu=185 max-update=182 bonded since="), lines
    assert lines[ADDRESS2].endswith(" subscribed=stream"), lines
    assert lines[ADDRESS].startswith(ADDRESS + " - mtu=- max-update=- since="), lines
    out = gattctl(private_bus, "centrals", "--json")
    assert out.returncode == 0, out.stderr
    listed = {c["address"]: c for c in json.loads(out.stdout)}
    assert listed[ADDRESS2]["mtu"] == 185 and listed[ADDRESS2]["subscribed"] == ["stream"]
    assert listed[ADDRESS]["mtu"] is None and listed[ADDRESS]["bonded"] is False

    out = gattctl(private_bus, "disconnect", ADDRESS.lower())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ADDRESS + ": disconnected"
    assert any("dev_00_11_22_33_44_55 Disconnect" in str(l) for l in standin.call("Log"))
    assert gattd.child.wait_for_line("central disconnected", 10)
    assert [str(c["Address"]) for c in manager.ListCentrals()] == [ADDRESS2]

    out = gattctl(private_bus, "disconnect", ADDRESS)
    assert out.returncode == 3 and "no central with address %s is connected" % ADDRESS in out.stderr, out.stderr
    out = gattctl(private_bus, "disconnect", "00:11:22:33:44:GG")
    assert out.returncode == 5 and '"00:11:22:33:44:GG" is not an address' in out.stderr, out.stderr
    out = gattctl(private_bus, "disconnect")
    assert out.returncode == 2, out.stderr


def test_centrals_on_a_shared_socket_leave_subscriptions_unknown(gattd, standin, manager, private_bus):
    connect(standin, ADDRESS)
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, 1) == 1
    centrals = list(manager.ListCentrals())
    assert [str(c["Address"]) for c in centrals] == [ADDRESS]
    assert "Subscribed" not in centrals[0]
    out = gattctl(private_bus, "centrals", "--json")
    assert json.loads(out.stdout)[0]["subscribed"] is None
