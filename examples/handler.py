#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A thermostat whose values come from this program, not from gattd's store.

It registers an org.gattd.Handler1 object for three characteristics of handler.json:

- `temperature`: every read gets a fresh reading (int16, 0.01 degC), from SENSOR_FILE (an
  iio/thermal file in millidegrees) when given, else a simulated one;
- `setpoint`: writes are decided here: 10.00 to 30.00 degC is accepted (gattd then stores,
  saves and notifies it as any write), anything else is refused with ATT error 0x80
  (`org.gattd.Att.Application0x80`), which the central sees;
- `report`: a text longer than one ATT packet, new at each read; gattd asks once per read
  sequence, so a central's long read never mixes two reports.

This is CoreBluetooth's didReceiveRead / didReceiveWrite with respond(to:withResult:), over
D-Bus. If this program stops, gattd serves the stored value (temperature, report) or
refuses with 0x80 (setpoint), as handler.json says. Uses Debian's python3-dbus and
python3-gi; run as root or as a member of group gattd.

    examples/handler.py [--sensor-file /sys/class/thermal/thermal_zone0/temp]
"""

import argparse
import struct
import sys
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

HANDLER = "org.gattd.Handler1"
OBJECT = "/org/example/thermostat"


class AttError(dbus.DBusException):
    """An ATT result for the central: org.gattd.Att.<Name>."""

    def __init__(self, name, message):
        super().__init__(message, name="org.gattd.Att." + name)


class Thermostat(dbus.service.Object):
    def __init__(self, bus, sensor_file):
        super().__init__(bus, OBJECT)
        self.sensor_file = sensor_file
        self.reports = 0
        self.started = time.monotonic()

    def temperature(self):
        if self.sensor_file:
            with open(self.sensor_file) as f:
                return int(f.read().strip()) // 10  # millidegrees -> 0.01 degC
        return 2000 + int((time.monotonic() - self.started) * 10) % 500

    @dbus.service.method(HANDLER, in_signature="sa{sv}", out_signature="ay")
    def Read(self, characteristic, request):
        if characteristic == "temperature":
            return dbus.ByteArray(struct.pack("<h", self.temperature()))
        if characteristic == "report":
            self.reports += 1
            text = "report %d: temperature %.2f C, requested by %s at offset %d; " % (
                self.reports, self.temperature() / 100, request.get("device", "?"), request.get("offset", 0))
            return dbus.ByteArray((text * 4)[:200].encode())
        raise AttError("ReadNotPermitted", "not served here: %s" % characteristic)

    @dbus.service.method(HANDLER, in_signature="saya{sv}", out_signature="")
    def Write(self, characteristic, value, request):
        if characteristic != "setpoint":
            raise AttError("WriteNotPermitted", "not served here: %s" % characteristic)
        (setpoint,) = struct.unpack("<h", bytes(value))
        if not 1000 <= setpoint <= 3000:
            raise AttError("Application0x80", "setpoint %.2f C is outside 10-30 C" % (setpoint / 100))
        print("setpoint %.2f C from %s" % (setpoint / 100, request.get("device", "?")), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sensor-file", help="temperature in millidegrees (e.g. thermal_zone0/temp)")
    args = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    thermostat = Thermostat(bus, args.sensor_file)
    manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    manager.RegisterHandler(OBJECT, ["temperature", "setpoint", "report"], dbus.Dictionary({}, signature="sv"))
    print("handler registered", flush=True)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, loop.quit)
    loop.run()
    del thermostat
    return 0


if __name__ == "__main__":
    sys.exit(main())
