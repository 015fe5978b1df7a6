#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stand-in for gattd in check-dbus-policy.sh: owns org.gattd on the bus given as argv[1]
and exports /org/gattd/app/char0 with org.gattd.Test1.Ping and a GATT ReadValue, and
/org/gattd with org.gattd.Manager1.GetStatus and org.gattd.Test1.Emit (emits
Manager1.ValueChanged, then Test1.Marker). Prints "ready" once the name is owned, "denied"
if owning it is refused. With --handler: owns no name, exports /test/handler with
org.gattd.Handler1.Read (a program's handler) and prints its unique name. With
--name NAME: owns NAME instead of org.gattd (an instance, org.gattd.hci1)."""
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


class Manager(dbus.service.Object):
    @dbus.service.method("org.gattd.Manager1", out_signature="a{sv}")
    def GetStatus(self):
        return {"Version": "policy-test"}

    @dbus.service.method("org.gattd.Manager1", in_signature="say")
    def SetValue(self, id, value):
        pass

    @dbus.service.signal("org.gattd.Manager1", signature="says")
    def ValueChanged(self, id, value, origin):
        pass

    @dbus.service.signal("org.gattd.Test1")
    def Marker(self):
        pass

    @dbus.service.method("org.gattd.Test1")
    def Emit(self):
        self.ValueChanged("secret", dbus.ByteArray(b"\x2a"), "central")
        self.Marker()


class Handler(dbus.service.Object):
    @dbus.service.method("org.gattd.Handler1", in_signature="sa{sv}", out_signature="ay")
    def Read(self, id, request):
        return dbus.ByteArray(b"\x2a")


DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
bus_name = sys.argv[3] if sys.argv[2:3] == ["--name"] else "org.gattd"
if sys.argv[2:] == ["--handler"]:  # a program that registers a handler: no name, its own object
    handler = Handler(bus, "/test/handler")
    print(bus.get_unique_name(), flush=True)
    GLib.MainLoop().run()
try:
    name = dbus.service.BusName(bus_name, bus, do_not_queue=True)
except dbus.exceptions.DBusException as error:
    print("denied" if "AccessDenied" in error.get_dbus_name() else "error " + str(error), flush=True)
    sys.exit(1)
char = Char(bus, "/org/gattd/app/char0")
manager = Manager(bus, "/org/gattd")
print("ready", flush=True)
GLib.MainLoop().run()
