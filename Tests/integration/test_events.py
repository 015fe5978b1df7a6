# SPDX-License-Identifier: MIT
"""Events for programs: subscriptions, centrals, the adapter and
advertisements, as `gattctl watch --json` (a subscribed D-Bus client) sees them, and the
stale-subscription case: when bluetoothd or the adapter goes away, nobody is subscribed.
"""

import json
import os

import dbus
import pytest

from conftest import gattctl_binary, watch_event, watch_events
from harness import DEVICE, one_by_uuid

WAIT = dbus.UInt32(10000)
HR = "2a37"


@pytest.fixture
def watched(start_gattd, standin, private_bus):
    g = start_gattd("control.json")
    standin.call("WaitForApplication", WAIT)
    assert g.child.wait_for_line("control API ready", 10)
    watch = watch_events(private_bus)
    gattctl = gattctl_binary()
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address)
    yield g, watch, gattctl, env
    watch.stop()


def listed(gattctl, env):
    import subprocess
    out = subprocess.run([gattctl, "list", "--json"], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 0, out.stderr
    return {item["id"]: item for item in map(json.loads, out.stdout.splitlines())}


def test_subscriptions_and_centrals(watched, standin):
    _, watch, _, _ = watched
    hr = one_by_uuid(standin.call("Attributes"), HR)["path"]
    standin.call("Subscribe", hr, DEVICE)
    watch_event(watch, event="subscribed", id="hr-measurement")
    standin.call("Unsubscribe", hr, DEVICE)
    watch_event(watch, event="unsubscribed", id="hr-measurement")
    device = standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    connected = watch_event(watch, event="connected", address="00:11:22:33:44:55")
    assert connected["device"] == str(device)
    label = one_by_uuid(standin.call("Attributes"), "12345678-1234-5678-1234-56789abcdef1")["path"]
    standin.call("Read", label, dbus.UInt16(0), dbus.UInt16(100), device)  # the MTU gattd learns from it
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", False)
    disconnected = watch_event(watch, event="disconnected", address="00:11:22:33:44:55")
    assert disconnected["mtu"] == "100" and disconnected["device"] == str(device)


def test_adapter_power_advertisements_and_stale_subscriptions(watched, standin):
    _, watch, gattctl, env = watched
    hr = one_by_uuid(standin.call("Attributes"), HR)["path"]
    standin.call("Subscribe", hr, DEVICE)
    watch_event(watch, event="subscribed", id="hr-measurement")
    assert listed(gattctl, env)["hr-measurement"]["subscribed"] is True
    standin.call("SetPowered", False)
    watch_event(watch, event="adapter", state="unpowered")
    standin.call("SetPowered", True)
    watch_event(watch, event="adapter", state="powered")
    standin.call("RemoveAdapter", "hci0")
    watch_event(watch, event="adapter", adapter="hci0", state="gone")
    watch_event(watch, event="unsubscribed", id="hr-measurement")
    assert listed(gattctl, env)["hr-measurement"]["subscribed"] is False, "no listener that does not exist"
    watch_event(watch, event="advertisement", id="main", state="waiting-for-adapter")
    standin.call("AddAdapter", "hci0")
    watch_event(watch, event="adapter", adapter="hci0", state="present")
    watch_event(watch, event="advertisement", id="main", state="advertising")


def test_bluetoothd_gone_ends_subscriptions(watched, standin):
    g, watch, gattctl, env = watched
    hr = one_by_uuid(standin.call("Attributes"), HR)["path"]
    standin.call("Subscribe", hr, DEVICE)
    watch_event(watch, event="subscribed", id="hr-measurement")
    standin.restart()
    watch_event(watch, event="unsubscribed", id="hr-measurement")
    watch_event(watch, event="adapter", state="gone")
    assert g.child.wait_for_line("subscriptions ended with the adapter", 10)
    standin.call("WaitForApplication", WAIT)
    watch_event(watch, event="adapter", adapter="hci0", state="present")
    assert listed(gattctl, env)["hr-measurement"]["subscribed"] is False


def test_advertisement_switched_off_and_on(watched):
    import subprocess
    _, watch, gattctl, env = watched
    assert subprocess.run([gattctl, "advertise", "off", "main"], env=env, timeout=30).returncode == 0
    watch_event(watch, event="advertisement", id="main", state="disabled")
    assert subprocess.run([gattctl, "advertise", "on", "main"], env=env, timeout=30).returncode == 0
    watch_event(watch, event="advertisement", id="main", state="advertising")


def test_watch_ends_with_one_clear_line_when_gattd_stops(watched):
    g, watch, _, _ = watched
    g.stop()
    assert watch.proc.wait(10) == 1
    watch.out.wait_for(lambda line: False, 1)  # everything it printed until it closed
    after = [line for line in watch.out.lines if not line.startswith("{") and "watching" not in line]
    assert after == ["gattctl: gattd stopped (it left the bus); nothing more to watch"], after
