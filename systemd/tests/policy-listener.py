#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Signal receiver for check-dbus-policy.sh: on the bus given as argv[1], subscribes to
org.gattd.Manager1.ValueChanged and org.gattd.Test1.Marker from org.gattd, prints
"listening" once the match rules are in place, then, when Marker arrives, "received
ValueChanged" or "no ValueChanged" (the bus delivers one sender's signals in order, so
Marker arriving first proves ValueChanged was withheld) and exits. argv[2], when given, is
the sender's name instead of org.gattd (an instance)."""
import sys

import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
seen = []
loop = GLib.MainLoop()


def changed(*_):
    seen.append("ValueChanged")


def marker(*_):
    print("received ValueChanged" if seen else "no ValueChanged", flush=True)
    loop.quit()


sender = sys.argv[2] if len(sys.argv) > 2 else "org.gattd"
bus.add_signal_receiver(changed, "ValueChanged", "org.gattd.Manager1", sender, "/org/gattd")
bus.add_signal_receiver(marker, "Marker", "org.gattd.Test1", sender, "/org/gattd")
# A round trip: the bus has processed the AddMatch calls sent before it.
bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
print("listening", flush=True)
GLib.timeout_add(10000, lambda: (print("timed out", flush=True), loop.quit()))
loop.run()
