#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A stand-in for bluetoothd 5.66 on a private bus, for gattd's integration tests.

Usage: fake_bluetoothd.py --address <bus address> [--adapters hci0,hci1] [--max-adverts 5]
       [--emulate 5.66|healthy-5.82|ext-adv-data-length|gatt-handle-required]

Owns org.bluez (and org.gattd.test.Standin for the test-control interface) on
that bus, exports the adapters with GattManager1 and LEAdvertisingManager1, and
behaves as bluetoothd does towards applications (docs/bluez-contract.md §1-§6, §7, §8).
Prints "READY <unique name>" on stdout once both names are owned. SIGTERM is a
clean stop (adverts get Release()); SIGKILL models a crash.
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dbus                      # noqa: E402
import dbus.bus                  # noqa: E402
import dbus.lowlevel             # noqa: E402
import dbus.mainloop.glib        # noqa: E402
import dbus.service              # noqa: E402
from gi.repository import GLib   # noqa: E402

import bluez_objects             # noqa: E402
from acquired import Acquired            # noqa: E402
from adv_manager import AdvertManager    # noqa: E402
from central import Central               # noqa: E402
from control import ControlObject         # noqa: E402
from emulation import Emulation           # noqa: E402
from gatt_manager import GattManager      # noqa: E402

BLUEZ_NAME = "org.bluez"
CONTROL_NAME = "org.gattd.test.Standin"


class Daemon:
    """Owns the connection, the exported objects and the registries."""

    def __init__(self, bus, adapter_names, max_adverts, verbose, emulation=None):
        self.bus = bus
        self.emulation = emulation or Emulation("5.66")
        self.max_adverts = max_adverts
        self.verbose = verbose
        self.log_lines = []
        self.warnings = []
        self.adapters = {}
        self.root = bluez_objects.RootObject(bus, self)
        self.bluez = bluez_objects.BluezObject(bus, self)
        self.devices = {}          # object path -> DeviceObject
        self.gatt = GattManager(self)
        self.adverts = AdvertManager(self)
        self.acquired = Acquired(self)
        self.central = Central(self)
        self.control = ControlObject(bus, self)
        for name in adapter_names:
            self.add_adapter(name, announce=False)

    def log(self, line):
        stamped = "%.6f %s" % (time.monotonic(), line)
        self.log_lines.append(stamped)
        if self.verbose:
            print(stamped, file=sys.stderr, flush=True)

    def warn(self, line):
        self.warnings.append(line)
        self.log("WARNING " + line)

    def exported(self):
        return ([self.bluez] + [self.adapters[n] for n in sorted(self.adapters)]
                + [self.devices[p] for p in sorted(self.devices)])

    def device(self, adapter_name, address):
        """The Device1 object whose Address is `address` under the adapter (the connected one
        when two share it), created at dev_<address> (InterfacesAdded) if there is none."""
        adapter = self.adapters.get(adapter_name)
        if adapter is None:
            raise bluez_objects.bluez_error("DoesNotExist", "no adapter %s" % adapter_name)
        same = [d for p, d in sorted(self.devices.items())
                if p.startswith(adapter.path + "/")
                and str(d.props[bluez_objects.DEVICE1]["Address"]).upper() == address.upper()]
        if same:
            return sorted(same, key=lambda d: bool(d.props[bluez_objects.DEVICE1]["Connected"]))[-1]
        return self.add_device(adapter_name, address)

    def add_device(self, adapter_name, address, address_type="public", path_address=None):
        """A new Device1 (InterfacesAdded) at dev_<path_address or address>, even when another
        object has the same Address (bluetoothd after a phone paired again with a new IRK)."""
        adapter = self.adapters.get(adapter_name)
        if adapter is None:
            raise bluez_objects.bluez_error("DoesNotExist", "no adapter %s" % adapter_name)
        device = bluez_objects.DeviceObject(self.bus, self, adapter.path, address, address_type, path_address)
        if device.path in self.devices:
            device.remove_from_connection()
            raise bluez_objects.bluez_error("AlreadyExists", "%s exists" % device.path)
        self.devices[device.path] = device
        self.root.InterfacesAdded(dbus.ObjectPath(device.path), dbus.Dictionary(device.managed(), signature="sa{sv}"))
        return device

    def remove_device(self, adapter, path, sender):
        """Adapter1.RemoveDevice: the device and its keys are forgotten (link dropped first)."""
        device = self.devices.get(path)
        if device is None or not path.startswith(adapter.path + "/"):
            raise bluez_objects.bluez_error("DoesNotExist", "Does Not Exist")
        device.update(bluez_objects.DEVICE1, Connected=dbus.Boolean(False))
        del self.devices[path]
        device.remove_from_connection()
        self.root.InterfacesRemoved(dbus.ObjectPath(path), dbus.Array(list(device.props.keys()), signature="s"))
        self.log("device %s removed by %s" % (path, sender))

    def send_no_reply(self, dest, path, iface, member, signature="", args=()):
        """A call flagged NO_REPLY_EXPECTED, as bluetoothd's g_dbus_send_message."""
        msg = dbus.lowlevel.MethodCallMessage(dest, path, iface, member)
        msg.set_no_reply(True)
        if signature:
            msg.append(signature=signature, *args)
        self.bus.send_message(msg)

    def add_adapter(self, name, announce=True):
        if name in self.adapters:
            raise bluez_objects.bluez_error("AlreadyExists", "adapter %s exists" % name)
        index = int(name[3:]) if name.startswith("hci") and name[3:].isdigit() else len(self.adapters)
        adapter = bluez_objects.AdapterObject(self.bus, self, name, index, self.max_adverts)
        self.adapters[name] = adapter
        if announce:
            self.root.InterfacesAdded(dbus.ObjectPath(adapter.path),
                                      dbus.Dictionary(adapter.managed(), signature="sa{sv}"))
        self.log("adapter %s added" % name)

    def remove_adapter(self, name):
        adapter = self.adapters.pop(name, None)
        if adapter is None:
            raise bluez_objects.bluez_error("DoesNotExist", "no adapter %s" % name)
        self.adverts.drop_adapter(name)
        self.gatt.drop_adapter(name)
        adapter.remove_from_connection()
        self.root.InterfacesRemoved(dbus.ObjectPath(adapter.path),
                                    dbus.Array(list(adapter.props.keys()), signature="s"))
        self.log("adapter %s removed" % name)

    def shutdown(self):
        """Clean stop: adapter_remove on each adapter sends Release to adverts."""
        for name in list(self.adapters):
            self.adverts.drop_adapter(name)
        self.bus.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True, help="D-Bus address of the private bus")
    parser.add_argument("--adapters", default="hci0", help="comma-separated adapter names")
    parser.add_argument("--max-adverts", type=int, default=5)
    parser.add_argument("--verbose", action="store_true", help="log every event to stderr")
    parser.add_argument("--emulate", default="5.66", help="which bluetoothd to play (emulation.py)")
    args = parser.parse_args(argv)
    emulation = Emulation(args.emulate)

    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(args.address)
    daemon = Daemon(bus, [a for a in args.adapters.split(",") if a], args.max_adverts, args.verbose, emulation)
    for name in (BLUEZ_NAME, CONTROL_NAME):
        result = bus.request_name(name, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
        if result != dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER:
            print("fake_bluetoothd: cannot own %s (result %d)" % (name, result), file=sys.stderr)
            return 1
    loop = GLib.MainLoop()

    def on_term():
        daemon.log("SIGTERM: clean stop")
        daemon.shutdown()
        loop.quit()
        return False

    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGTERM, on_term)
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGINT, on_term)
    print("READY %s" % bus.get_unique_name(), flush=True)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
