#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stream a sensor through gattd without losing a sample.

The characteristic must have `"delivery": "all"` (see stream.json): gattd queues every
value and notifies them in order at its pacing rate. When the queue is full, SetValue
fails with org.gattd.Error.QueueFull and nothing is stored; gattd then sends
ReadyToUpdate(id) once there is room, and this program goes on from the sample it was
refused. That is CoreBluetooth's `updateValue(_:for:onSubscribedCentrals:)` returning
false and `peripheralManagerIsReady(toUpdateSubscribers:)`.

Each sample here is a 32-bit little-endian sequence number followed by a reading
(a 16-bit value from SENSOR_FILE if given, else a sawtooth). Uses Debian's python3-dbus
and python3-gi; gattd is reached at org.gattd on the system bus (or on
$DBUS_SYSTEM_BUS_ADDRESS). The program waits for gattd at start and, when gattd restarts,
subscribes again and goes on from the sample the old gattd did not take. Run it as a
member of group gattd (or root), or with examples/stream.service.

    examples/stream.py --id samples --count 1000
"""

import argparse
import struct
import sys

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

BUS_NAME = "org.gattd"
PATH = "/org/gattd"
MANAGER = "org.gattd.Manager1"
QUEUE_FULL = "org.gattd.Error.QueueFull"
# SetValue's errors when gattd went away while it was out.
GATTD_GONE = {"org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.ServiceUnknown",
              "org.freedesktop.DBus.Error.NameHasNoOwner", "org.freedesktop.DBus.Error.UnknownObject",
              "org.freedesktop.DBus.Error.Disconnected"}


def reading(sensor_file, sequence):
    if sensor_file:
        with open(sensor_file) as f:
            return int(f.read().strip() or 0) & 0xFFFF
    return (sequence * 37) & 0xFFFF


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--id", default="samples", help="characteristic id (delivery: all)")
    parser.add_argument("--count", type=int, default=0, help="samples to send; 0 = until interrupted")
    parser.add_argument("--sensor-file", help="read each sample's value from this file (e.g. an iio raw value)")
    args = parser.parse_args()

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    loop = GLib.MainLoop()
    state = {"next": 0, "refused": 0, "waiting": True, "failed": None, "manager": None,
             "outstanding": False}

    def send_next():
        if args.count and state["next"] >= args.count:
            loop.quit()
            return
        sample = struct.pack("<IH", state["next"], reading(args.sensor_file, state["next"]))
        state["outstanding"] = True
        manager = state["manager"]
        manager.SetValue(args.id, dbus.ByteArray(sample), reply_handler=accepted,
                         error_handler=lambda error: refused(error, manager))

    def accepted():
        state["outstanding"] = False
        state["next"] += 1
        send_next()

    def refused(error, manager):
        state["outstanding"] = False
        if error.get_dbus_name() == QUEUE_FULL:
            state["refused"] += 1
            state["waiting"] = True  # ReadyToUpdate resumes with the same sample
            return
        if error.get_dbus_name() in GATTD_GONE:
            # the same sample again, to the new gattd when it is there already (else
            # gattd_owner sends it when one comes)
            if state["manager"] is not None and state["manager"] is not manager:
                send_next()
            return
        state["failed"] = "%s: %s" % (error.get_dbus_name(), error.get_dbus_message())
        loop.quit()

    def ready(characteristic):
        if characteristic == args.id and state["waiting"] and state["manager"] is not None:
            state["waiting"] = False
            send_next()

    def gattd_owner(owner):
        """org.gattd got an owner (at start, or gattd came back): subscribe and go on."""
        if not owner:
            state["manager"] = None
            print("stream: gattd is gone; waiting for it to come back", file=sys.stderr, flush=True)
            return
        state["manager"] = dbus.Interface(bus.get_object(BUS_NAME, PATH), MANAGER)
        state["manager"].Subscribe()  # signals go only to subscribed clients
        state["waiting"] = False
        if not state["outstanding"]:  # else its answer goes on
            send_next()

    bus.add_signal_receiver(ready, signal_name="ReadyToUpdate", dbus_interface=MANAGER, bus_name=BUS_NAME,
                            path=PATH)
    bus.watch_name_owner(BUS_NAME, gattd_owner)  # called now with the current owner, then on each change
    loop.run()
    if state["failed"]:
        print("stream: %s" % state["failed"], file=sys.stderr)
        return 1
    print("stream: sent %d samples, %d refused while the queue was full" % (state["next"], state["refused"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
