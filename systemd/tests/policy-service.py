#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stand-in for gattd in check-dbus-policy.sh: owns org.gattd on the bus given as argv[1]
and exports /org/gattd/app/char0 with org.gattd.Test1.Ping and a GATT ReadValue.
Prints "ready" once the name is owned, "denied" if owning it is refused."""
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib


class Char(dbus.service.Object):
    @dbus.service.method("org.gattd.Test1", out_signature="s")
    def Ping(self):
        return "pong"

    @dbus.service.method("org.bluez.GattCharacteristic1", in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        return dbus.ByteArray(b"\x2a")


DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
try:
    name = dbus.service.BusName("org.gattd", bus, do_not_queue=True)
except dbus.exceptions.DBusException as error:
    print("denied" if "AccessDenied" in error.get_dbus_name() else "error " + str(error), flush=True)
    sys.exit(1)
char = Char(bus, "/org/gattd/app/char0")
print("ready", flush=True)
GLib.MainLoop().run()
