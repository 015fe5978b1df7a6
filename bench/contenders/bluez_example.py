# SPDX-License-Identifier: MIT
"""Benchmark contender: BlueZ's example-gatt-server classes (dbus-python, GLib).

Usage: bluez_example.py EXAMPLE_COPY
EXAMPLE_COPY is a copy of bluez-test-scripts' example-gatt-server made at run
time by bench/run (never committed). Only its Application/Service/
Characteristic classes are used; the service is the benchmark definition:
rw characteristic (read, write; value 00 11 22 33) and a notify characteristic
carrying a 4-byte little-endian sequence number.
Notifications: BENCH_NOTIFY=timer -> GLib.timeout_add(1 ms) tick,
BENCH_NOTIFY=flood -> GLib.idle_add (as fast as the loop gets idle).
"""
import importlib.machinery
import importlib.util
import os
import sys

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

SVC_UUID = "12345678-1234-5678-1234-56789abcdef0"
RW_UUID = "12345678-1234-5678-1234-56789abcdef1"
SEQ_UUID = "12345678-1234-5678-1234-56789abcdef2"


def load_example(path):
    loader = importlib.machinery.SourceFileLoader("example_gatt_server", path)
    spec = importlib.util.spec_from_loader("example_gatt_server", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


ex = load_example(sys.argv[1])


class BenchApplication(ex.Application):
    def __init__(self, bus):
        self.path = "/"
        self.services = []
        dbus.service.Object.__init__(self, bus, self.path)
        service = ex.Service(bus, 0, SVC_UUID, True)
        service.add_characteristic(RwCharacteristic(bus, 0, service))
        service.add_characteristic(SeqCharacteristic(bus, 1, service))
        self.add_service(service)


class RwCharacteristic(ex.Characteristic):
    def __init__(self, bus, index, service):
        ex.Characteristic.__init__(self, bus, index, RW_UUID, ["read", "write"], service)
        self.value = [dbus.Byte(b) for b in (0x00, 0x11, 0x22, 0x33)]

    @dbus.service.method(ex.GATT_CHRC_IFACE, in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        offset = int(options.get("offset", 0))
        if offset > len(self.value):
            raise ex.InvalidArgsException()
        return self.value[offset:]

    @dbus.service.method(ex.GATT_CHRC_IFACE, in_signature="aya{sv}")
    def WriteValue(self, value, options):
        offset = int(options.get("offset", 0))
        self.value = self.value[:offset] + list(value)


class SeqCharacteristic(ex.Characteristic):
    def __init__(self, bus, index, service):
        ex.Characteristic.__init__(self, bus, index, SEQ_UUID, ["notify"], service)
        self.seq = 0
        self.source = None
        self.flood = os.environ.get("BENCH_NOTIFY") == "flood"

    def tick(self):
        s = self.seq
        value = dbus.Array([dbus.Byte(s & 0xFF), dbus.Byte((s >> 8) & 0xFF),
                            dbus.Byte((s >> 16) & 0xFF), dbus.Byte(s >> 24)], signature="y")
        self.PropertiesChanged(ex.GATT_CHRC_IFACE, {"Value": value}, [])
        self.seq = (s + 1) & 0xFFFFFFFF
        return True

    @dbus.service.method(ex.GATT_CHRC_IFACE)
    def StartNotify(self):
        if self.source is None:
            self.source = GLib.idle_add(self.tick) if self.flood else GLib.timeout_add(1, self.tick)

    @dbus.service.method(ex.GATT_CHRC_IFACE)
    def StopNotify(self):
        if self.source is not None:
            GLib.source_remove(self.source)
            self.source = None


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    adapter = ex.find_adapter(bus)
    if not adapter:
        sys.exit("GattManager1 interface not found")
    manager = dbus.Interface(bus.get_object(ex.BLUEZ_SERVICE_NAME, adapter), ex.GATT_MANAGER_IFACE)
    app = BenchApplication(bus)
    loop = GLib.MainLoop()

    def failed(error):
        print("RegisterApplication failed:", error, file=sys.stderr)
        loop.quit()

    manager.RegisterApplication(app.get_path(), {}, reply_handler=lambda: None, error_handler=failed)
    loop.run()


if __name__ == "__main__":
    main()
