# SPDX-License-Identifier: MIT
"""examples/led.sh: a shell program on gattctl, against the stand-in."""

import os

import dbus

from conftest import REPO, gattctl_binary
from harness import DEVICE, Child, one_by_uuid

LED = "12345678-1234-5678-1234-56789abcb001"
UPTIME = "12345678-1234-5678-1234-56789abcb002"


def test_led_script_switches_the_led_and_publishes_uptime(start_gattd, standin, private_bus, tmp_path):
    g = start_gattd(os.path.join(REPO, "examples", "led.json"))
    standin.call("WaitForApplication", dbus.UInt32(10000))
    assert g.child.wait_for_line("control API ready", 10)
    attributes = standin.call("Attributes")
    uptime, led = one_by_uuid(attributes, UPTIME)["path"], one_by_uuid(attributes, LED)["path"]
    standin.call("Subscribe", uptime, DEVICE)
    led_file = tmp_path / "brightness"
    led_file.write_text("0\n")
    script = Child(["/bin/sh", os.path.join(REPO, "examples", "led.sh")],
                   env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address, "LED_PATH": str(led_file),
                              "INTERVAL": "1", "GATTCTL": gattctl_binary()})
    try:
        values = standin.call("WaitForNotifications", uptime, dbus.UInt32(1), dbus.UInt32(10000))
        assert bytes(values[0]).decode().endswith(" s") and bytes(values[0]) != b"0 s"
        assert script.wait_for_line("watching", 10), "gattctl watch is subscribed"
        standin.call("Write", led, dbus.ByteArray(b"\x01"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)
        assert script.wait_for_line("led.sh: LED on", 10)
        assert led_file.read_text() == "1\n"
        standin.call("Write", led, dbus.ByteArray(b"\x00"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)
        assert script.wait_for_line("led.sh: LED off", 10)
        assert led_file.read_text() == "0\n"
        # gattd restarts: the script watches the new one.
        g.stop()
        assert script.wait_for_line("led.sh: gattd is gone; watching again when it is back", 10)
        g = start_gattd(os.path.join(REPO, "examples", "led.json"))
        standin.call("WaitForApplication", dbus.UInt32(10000))
        assert script.out.wait_for(lambda _: sum(line.startswith("watching ") for line in script.out.lines) >= 2, 20), \
            "gattctl watch is subscribed to the new gattd"
        led = one_by_uuid(standin.call("Attributes"), LED)["path"]
        standin.call("Write", led, dbus.ByteArray(b"\x01"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)
        assert script.out.wait_for(lambda _: sum("LED on" in line for line in script.out.lines) >= 2, 10)
        assert led_file.read_text() == "1\n"
        assert script.proc.poll() is None, "the script outlived gattd's restart"
    finally:
        script.stop()
