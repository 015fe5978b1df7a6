# SPDX-License-Identifier: MIT
"""Streams without loss: `delivery: "all"`, QueueFull and ReadyToUpdate.

examples/stream.py is the producer: it calls SetValue as fast as gattd answers, waits for
ReadyToUpdate after QueueFull, and goes on with the refused sample. The stand-in
bluetoothd plays the subscribed central and records every notification.
"""

import json
import os
import struct
import subprocess

import dbus
import pytest

from conftest import REPO
from harness import DEVICE, Child, one_by_uuid

SAMPLES = "12345678-1234-5678-1234-56789abc7001"
EXAMPLE = os.path.join(REPO, "examples", "stream.py")
CONFIG = os.path.join(REPO, "examples", "stream.json")


def subscribed(start_gattd, standin, config, uuid):
    """gattd serving `config` with the control API up; the stand-in's central subscribed to
    `uuid`; returns the characteristic's path."""
    g = start_gattd(config)
    standin.call("WaitForApplication", dbus.UInt32(10000))
    assert g.child.wait_for_line("control API ready", 10)
    path = one_by_uuid(standin.call("Attributes"), uuid)["path"]
    standin.call("Subscribe", path, DEVICE)
    return path


@pytest.mark.timing
def test_delivery_all_at_1khz_for_10s_loses_no_sample(start_gattd, standin, private_bus):
    path = subscribed(start_gattd, standin, CONFIG, SAMPLES)
    count = 10000  # notifyIntervalMs 1: at most 1,000 per second, so at least 10 s
    producer = subprocess.run(
        ["/usr/bin/python3", EXAMPLE, "--id", "samples", "--count", str(count)],
        env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address),
        capture_output=True, text=True, timeout=120)
    assert producer.returncode == 0, producer.stderr
    sent, refused = [int(w) for w in producer.stdout.split() if w.isdigit()][:2]
    assert sent == count
    assert refused > 0, "the producer outran the 1 kHz pacing, so the queue must have filled"
    values = standin.call("WaitForNotifications", path, dbus.UInt32(count), dbus.UInt32(60000), timeout=90)
    sequence = [struct.unpack("<IH", bytes(v))[0] for v in values]
    assert sequence == list(range(count)), "lost or reordered: first gap at %s" % next(
        (i for i, s in enumerate(sequence) if s != i), None)


def test_queue_full_refuses_with_a_clear_error_and_stores_nothing(start_gattd, standin, private_bus, tmp_path):
    # The example's pacing (1 ms) made with 10 s: one value leaves, the queue's 64 wait, and the
    # next SetValue is refused however long a round trip takes (an emulated gattd: more than
    # 1 ms, so at the example's pacing the queue never filled under qemu-user).
    with open(CONFIG) as f:
        config = json.load(f)
    config["services"][0]["characteristics"][0]["notifyIntervalMs"] = 10000
    slow = tmp_path / "stream.json"
    slow.write_text(json.dumps(config))
    subscribed(start_gattd, standin, str(slow), SAMPLES)
    bus = dbus.bus.BusConnection(private_bus.address)
    manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    error = None
    stored = []
    for n in range(2000):  # the queue holds 64
        value = dbus.ByteArray(struct.pack("<IH", n, 0))
        try:
            manager.SetValue("samples", value)
            stored.append(n)
        except dbus.DBusException as e:
            error = e
            break
    assert error is not None, "2000 values never filled a queue of 64"
    assert error.get_dbus_name() == "org.gattd.Error.QueueFull"
    assert "samples was not changed" in error.get_dbus_message()
    assert "wait for ReadyToUpdate" in error.get_dbus_message()
    current = bytes(manager.GetValue("samples"))
    assert struct.unpack("<IH", current)[0] == stored[-1], "the refused value must not be stored"
    bus.close()


def test_indications_wait_for_confirm(start_gattd, standin, private_bus):
    path = subscribed(start_gattd, standin, "indicate.json", "12345678-1234-5678-1234-56789abca001")
    bus = dbus.bus.BusConnection(private_bus.address)
    manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    manager.SetValue("alarm", dbus.ByteArray(b"\x01"))
    assert [bytes(v) for v in standin.call("WaitForNotifications", path, dbus.UInt32(1), dbus.UInt32(5000))] == [b"\x01"]
    manager.SetValue("alarm", dbus.ByteArray(b"\x02"))
    manager.SetValue("alarm", dbus.ByteArray(b"\x03"))
    # A GetValue round trip after the sets: gattd has handled them; without Confirm nothing more went out.
    assert bytes(manager.GetValue("alarm")) == b"\x03"
    assert [bytes(v) for v in standin.call("Notifications", path)] == [b"\x01"], "no second indication before Confirm"
    standin.call("Confirm", path)
    values = standin.call("WaitForNotifications", path, dbus.UInt32(2), dbus.UInt32(5000))
    assert [bytes(v) for v in values] == [b"\x01", b"\x03"], "after Confirm the latest value goes out"
    bus.close()



def test_example_waits_for_gattd_and_goes_on_after_a_restart(start_gattd, standin, private_bus, tmp_path):
    """stream.py started before gattd waits for it; when gattd restarts it subscribes again and
    goes on with the samples the old gattd did not take."""
    producer = Child(["/usr/bin/python3", EXAMPLE, "--id", "samples"],
                     env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address},
                     log=open(str(tmp_path / "stream.log"), "a"))

    def sequence(values):
        return [struct.unpack("<IH", bytes(v))[0] for v in values]

    try:
        g = start_gattd(CONFIG)
        standin.call("WaitForApplication", dbus.UInt32(10000))
        path = one_by_uuid(standin.call("Attributes"), SAMPLES)["path"]
        standin.call("Subscribe", path, DEVICE)
        first = sequence(standin.call("WaitForNotifications", path, dbus.UInt32(20), dbus.UInt32(20000), timeout=30))
        # Samples produced before the central subscribed are stored, not notified (how many depends on
        # how fast the machine is: 8 under qemu-user); from the subscription on none is lost or doubled.
        assert first[:20] == list(range(first[0], first[0] + 20)), \
            "the producer that started first streams to the gattd that came later, in order: %r" % first[:20]
        g.stop()
        assert producer.wait_for_line("stream: gattd is gone; waiting for it to come back", 10)
        before = sequence(standin.call("Notifications", path))
        start_gattd(CONFIG)
        standin.call("WaitForApplication", dbus.UInt32(10000))
        path = one_by_uuid(standin.call("Attributes"), SAMPLES)["path"]
        standin.call("Subscribe", path, DEVICE)
        values = standin.call("WaitForNotifications", path, dbus.UInt32(len(before) + 20), dbus.UInt32(20000),
                              timeout=30)
        later = sequence(values)[len(before):]
        assert len(later) >= 20 and later == sorted(later) and later[0] > before[-1], \
            "the new gattd gets the samples after those the old one took (%d before): %r" % (len(before), later[:5])
        assert producer.proc.poll() is None, "the producer outlived gattd's restart"
    finally:
        producer.stop()
