# SPDX-License-Identifier: MIT
"""What a local process that is not bluetoothd can learn of gattd's values over D-Bus.

Run on the guest's system bus (Debian's own policy files plus the project's
org.gattd.conf). Prints one line per finding and never fails by itself; the scenario
judges the lines:

  get <path> <error name or VALUE=hex>       Properties.Get(Value) on each characteristic
  objects <error name or n values>           GetManagedObjects on --root (an application)
  signal <sender> <path> value=<hex|->       each PropertiesChanged seen (gattd's, and
                                             bluetoothd's Device1 ones as the control that
                                             the match rules work)
Runs until SIGTERM (listen) or once (--once).
"""
import argparse
import signal
import sys

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

PROPS = 'org.freedesktop.DBus.Properties'


def say(line):
    print(line, flush=True)


def probe(bus, paths, root):
    try:
        objects = dbus.Interface(bus.get_object('org.gattd', root, introspect=False),
                                 'org.freedesktop.DBus.ObjectManager').GetManagedObjects()
        values = sum(1 for ifaces in objects.values() for props in ifaces.values() if 'Value' in props)
        say('objects %d objects, %d values' % (len(objects), values))
    except dbus.DBusException as e:
        say('objects %s' % e.get_dbus_name())
    for path in paths:
        try:
            value = dbus.Interface(bus.get_object('org.gattd', path, introspect=False), PROPS).Get(
                'org.bluez.GattCharacteristic1', 'Value')
            say('get %s VALUE=%s' % (path, bytes(value).hex()))
        except dbus.DBusException as e:
            say('get %s %s' % (path, e.get_dbus_name()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--path', action='append', default=[], help='characteristic object path to Get')
    parser.add_argument('--once', action='store_true')
    parser.add_argument('--root', default='/org/gattd/app',
                        help="an ObjectManager of gattd's (one application per service: /org/gattd/app/<service>)")
    args = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()

    def changed(interface, props, invalidated, path=None, sender=None):
        value = props.get('Value')
        say('signal %s %s %s value=%s' % (sender, path, interface,
                                          bytes(value).hex() if value is not None else '-'))
    # Every PropertiesChanged anyone sends, and (refused for non-root by the policy) eavesdropping.
    bus.add_signal_receiver(changed, 'PropertiesChanged', PROPS, path_keyword='path', sender_keyword='sender')
    try:
        bus.add_match_string("type='signal',eavesdrop='true'")
        say('eavesdrop match accepted')
    except dbus.DBusException as e:
        say('eavesdrop match %s' % e.get_dbus_name())
    probe(bus, args.path, args.root)
    if args.once:
        return
    say('listening')
    loop = GLib.MainLoop()
    signal.signal(signal.SIGTERM, lambda *_: loop.quit())
    loop.run()
    say('stopped')


if __name__ == '__main__':
    sys.exit(main())
