#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A thermostat whose values come from this program, not from gattd's store.

It registers an org.gattd.Handler1 object for three characteristics of handler.json:

- `temperature`: every read gets a fresh reading (int16, 0.01 degC), from SENSOR_FILE (an
  iio/thermal file in millidegrees) when given, else a simulated one;
- `setpoint`: only its writes are decided here (RegisterHandler's "operations": ["write"]);
  its reads are served by gattd from its store. handler.json's `accept` rule already
  refuses anything outside 10.00 to 30.00 degC with ATT error 0x80 ("value refused")
  before this program is asked; this program checks its own input again and refuses with
  the same 0x80 (`org.gattd.Att.Application0x80`). An accepted value is stored, saved and
  notified by gattd as any write;
- `report`: a text longer than one ATT packet, new at each read; gattd asks once per read
  sequence, so a central's long read never mixes two reports;
- `samples` (`delivery: "all"`): with --stream-hz, every reading is sent as a sample
  (sequence number, temperature) through SetValue; when gattd's queue is full the sample
  waits for ReadyToUpdate instead of being lost (CoreBluetooth's updateValue returning
  false, then peripheralManagerIsReady).

This is CoreBluetooth's didReceiveRead / didReceiveWrite with respond(to:withResult:), over
D-Bus. If this program is not running, gattd serves the stored value (temperature, report)
or refuses setpoint's writes with 0x81 ("program not running", handler.json's fallback), so
a central can tell that from 0x80. The program registers again whenever gattd (org.gattd)
comes back on the bus, and waits for it at start. Uses Debian's python3-dbus and python3-gi;
run as a member of group gattd (or root), or with examples/handler.service.

    examples/handler.py [--sensor-file /sys/class/thermal/thermal_zone0/temp] [--stream-hz 10]
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
                self.reports, self.temperature() / 100, request.get("address", "?"), request.get("offset", 0))
            return dbus.ByteArray((text * 4)[:200].encode())
        raise AttError("ReadNotPermitted", "not served here: %s" % characteristic)

    @dbus.service.method(HANDLER, in_signature="saya{sv}", out_signature="")
    def Write(self, characteristic, value, request):
        if characteristic != "setpoint":
            raise AttError("WriteNotPermitted", "not served here: %s" % characteristic)
        (setpoint,) = struct.unpack("<h", bytes(value))
        if not 1000 <= setpoint <= 3000:
            # handler.json's accept rule refuses these first; a program checks its input anyway.
            raise AttError("Application0x80", "setpoint %.2f C is outside 10-30 C" % (setpoint / 100))
        # `address` names the central as bluetoothd does (its identity once bonded); `device`
        # is only bluetoothd's object for it, never to be read for an address.
        print("setpoint %.2f C from %s" % (setpoint / 100, request.get("address", "?")), flush=True)


def operations(*names):
    """RegisterHandler's options: serve only these operations ("read", "write")."""
    return dbus.Dictionary({"operations": dbus.Array(names, signature="s")}, signature="sv")


class Stream:
    """Samples of the temperature to `samples`, none lost: a refused sample (QueueFull)
    is sent again when ReadyToUpdate says there is room."""

    def __init__(self, manager, thermostat, count):
        self.manager, self.thermostat, self.count = manager, thermostat, count
        self.pending = []   # samples taken and not yet accepted, oldest first
        self.sequence = 0
        self.waiting = False  # a SetValue is out, or the queue is full

    def tick(self):
        if self.count and self.sequence >= self.count:
            return False
        self.pending.append(struct.pack("<Ih", self.sequence, self.thermostat.temperature()))
        self.sequence += 1
        self.send()
        return True

    def send(self):
        if self.waiting or not self.pending or self.manager is None:
            return
        self.waiting = True
        self.manager.SetValue("samples", dbus.ByteArray(self.pending[0]),
                              reply_handler=self.accepted, error_handler=self.refused)

    def accepted(self):
        self.pending.pop(0)
        self.waiting = False
        if self.count and not self.pending and self.sequence >= self.count:
            print("streamed %d samples" % self.count, flush=True)
        self.send()

    def refused(self, error):
        if error.get_dbus_name() != "org.gattd.Error.QueueFull":
            print("stream: %s" % error.get_dbus_message(), file=sys.stderr, flush=True)
            self.waiting = False
        # QueueFull: stay waiting until ReadyToUpdate

    def ready(self, characteristic):
        if characteristic == "samples":
            self.waiting = False
            self.send()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sensor-file", help="temperature in millidegrees (e.g. thermal_zone0/temp)")
    parser.add_argument("--stream-hz", type=float, default=0, help="stream samples at this rate (0: no stream)")
    parser.add_argument("--samples", type=int, default=0, help="stop streaming after this many (0: never)")
    args = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    thermostat = Thermostat(bus, args.sensor_file)
    stream = None
    loop = GLib.MainLoop()
    status = {"exit": 0}
    registrations = {"count": 0}

    def gattd_owner(owner):
        """org.gattd got an owner (at start, or gattd came back): register (again).
        Claims end when gattd stops, so each new gattd is told afresh."""
        if not owner:
            print("gattd is gone; waiting for it to come back", flush=True)
            return
        manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
        try:
            # temperature and report: reads only (neither is writable); setpoint: writes
            # only, its reads are gattd's stored value.
            manager.RegisterHandler(OBJECT, ["temperature", "report"], operations("read"))
            manager.RegisterHandler(OBJECT, ["setpoint"], operations("write"))
        except dbus.DBusException as error:
            print("handler refused: %s: %s" % (error.get_dbus_name(), error.get_dbus_message()),
                  file=sys.stderr, flush=True)
            status["exit"] = 1
            loop.quit()
            return
        registrations["count"] += 1
        print("handler registered" + (" again" if registrations["count"] > 1 else ""), flush=True)
        if stream is not None:
            stream.manager = manager
            manager.Subscribe()  # signals go only to subscribed clients
            stream.waiting = False
            stream.send()

    if args.stream_hz > 0:
        stream = Stream(None, thermostat, args.samples)
        bus.add_signal_receiver(stream.ready, signal_name="ReadyToUpdate", dbus_interface="org.gattd.Manager1",
                                bus_name="org.gattd", path="/org/gattd")
        GLib.timeout_add(max(1, int(1000 / args.stream_hz)), stream.tick)
    bus.watch_name_owner("org.gattd", gattd_owner)  # called now with the current owner, then on each change
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, loop.quit)
    loop.run()
    del thermostat
    return status["exit"]


if __name__ == "__main__":
    sys.exit(main())
