#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""fake-gattd.py --config FILE --adapter hciN: a stand-in for gattd in the guest.

It exists only to prove the harness and the gattd plan of central.py before gattd itself
can run there: it serves a gattd JSON configuration through GattManager1 with the rules the
plan checks (reads sliced at the offset, minLength/maxLength -> InvalidValueLength, a write
to a notifying characteristic notifies), sets the adapter alias and prints
"registered" once bluetoothd accepted the application. It is not a reference for gattd.
FAKE_GATTD_BUG=ignore-maxLength makes it accept writes beyond maxLength (a deliberate bug).
"""
import argparse
import json
import os
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gattdplan import encode  # noqa: E402

CHRC = 'org.bluez.GattCharacteristic1'
DESC = 'org.bluez.GattDescriptor1'
SERVICE = 'org.bluez.GattService1'
PROPS = 'org.freedesktop.DBus.Properties'


class BluezError(dbus.exceptions.DBusException):
    def __init__(self, name, message=''):
        super().__init__(message, name='org.bluez.Error.' + name)


class Attribute(dbus.service.Object):
    """One exported GATT object (service, characteristic or descriptor)."""

    def __init__(self, bus, path, interface, props, spec=None):
        super().__init__(bus, path)
        self.path, self.interface, self.props, self.spec = path, interface, props, spec
        self.value = encode(spec['value']) if spec and 'value' in spec else b''
        self.notifying = False

    @dbus.service.method(PROPS, in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface):
        return self.props

    @dbus.service.signal(PROPS, signature='sa{sv}as')
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def _read(self, options):
        offset = int(options.get('offset', 0))
        if offset > len(self.value):
            raise BluezError('InvalidOffset')
        return dbus.Array(self.value[offset:], signature='y')

    def _write(self, value, options):
        offset = int(options.get('offset', 0))
        new = self.value[:offset] + bytes(value)
        lo, hi = self.spec.get('minLength', 0), self.spec.get('maxLength', 512)
        if os.environ.get('FAKE_GATTD_BUG') == 'ignore-maxLength':
            hi = 512   # a deliberate bug, to show that the central catches it
        if not lo <= len(new) <= hi:
            raise BluezError('InvalidValueLength')
        self.value = new
        if self.notifying:
            self.PropertiesChanged(CHRC, {'Value': dbus.Array(new, signature='y')}, [])


class Characteristic(Attribute):
    @dbus.service.method(CHRC, in_signature='a{sv}', out_signature='ay')
    def ReadValue(self, options):
        return self._read(options)

    @dbus.service.method(CHRC, in_signature='aya{sv}')
    def WriteValue(self, value, options):
        self._write(value, options)

    @dbus.service.method(CHRC)
    def StartNotify(self):
        self.notifying = True

    @dbus.service.method(CHRC)
    def StopNotify(self):
        self.notifying = False


class Descriptor(Attribute):
    @dbus.service.method(DESC, in_signature='a{sv}', out_signature='ay')
    def ReadValue(self, options):
        return self._read(options)

    @dbus.service.method(DESC, in_signature='aya{sv}')
    def WriteValue(self, value, options):
        self._write(value, options)


class Application(dbus.service.Object):
    def __init__(self, bus, config):
        super().__init__(bus, '/fake_gattd')
        self.objects = []
        for i, svc in enumerate(config['services']):
            spath = '/fake_gattd/service%d' % i
            self.objects.append(Attribute(bus, spath, SERVICE,
                                          {'UUID': svc['uuid'], 'Primary': True}))
            for j, c in enumerate(svc['characteristics']):
                cpath = '%s/char%d' % (spath, j)
                self.objects.append(Characteristic(bus, cpath, CHRC, {
                    'UUID': c['uuid'], 'Service': dbus.ObjectPath(spath),
                    'Flags': dbus.Array(c['flags'], signature='s')}, c))
                for k, d in enumerate(c.get('descriptors', [])):
                    self.objects.append(Descriptor(bus, '%s/desc%d' % (cpath, k), DESC, {
                        'UUID': d['uuid'], 'Characteristic': dbus.ObjectPath(cpath),
                        'Flags': dbus.Array(d['flags'], signature='s')}, d))

    @dbus.service.method('org.freedesktop.DBus.ObjectManager', out_signature='a{oa{sa{sv}}}')
    def GetManagedObjects(self):
        return {dbus.ObjectPath(o.path): {o.interface: o.props} for o in self.objects}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--config', required=True)
    parser.add_argument('--adapter', default='hci0')
    args = parser.parse_args()
    with open(args.config) as f:
        config = json.load(f)
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    adapter = bus.get_object('org.bluez', '/org/bluez/' + args.adapter)
    props = dbus.Interface(adapter, PROPS)
    props.Set('org.bluez.Adapter1', 'Powered', dbus.Boolean(True, variant_level=1))
    if config.get('alias'):
        props.Set('org.bluez.Adapter1', 'Alias', dbus.String(config['alias'], variant_level=1))
    app = Application(bus, config)
    loop = GLib.MainLoop()

    def failed(e):
        print('registration failed: %s' % e, flush=True)
        loop.quit()
        sys.exit(1)
    dbus.Interface(adapter, 'org.bluez.GattManager1').RegisterApplication(
        '/fake_gattd', {}, reply_handler=lambda: print('registered', flush=True),
        error_handler=failed)
    loop.run()
    return app


if __name__ == '__main__':
    main()
