# SPDX-License-Identifier: MIT
"""Several centrals at once (issue 24): the 5.66 double AcquireNotify, values sent to
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


def test_per_device_sockets_are_not_taken_for_lost_ones(gattd, standin, manager):
    per_device(standin, gattd)
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, 2) == 2
    manager.SetValue("stream", dbus.ByteArray(b"\x07\x00\x00\x00"))
    standin.call("WaitForNotifications", stream, dbus.UInt32(2), WAIT_MS)
    assert sorted(int(n) for _, _, n in standin.call("Sockets", stream, "notify")) == [1, 1]
