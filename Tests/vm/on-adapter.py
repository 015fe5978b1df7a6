#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""on-adapter.py HCI SCRIPT [ARG...]: run a BlueZ D-Bus example script on adapter HCI.

BlueZ's examples take the first adapter in GetManagedObjects, and bluetoothd's order is not
stable. This runs the installed script unchanged, with ObjectManager.GetManagedObjects
answers filtered so that the only adapter the script sees is HCI.
"""
import runpy
import sys

import dbus

if len(sys.argv) < 3:
    sys.exit(__doc__)
KEEP = '/org/bluez/' + sys.argv[1]
SCRIPT = sys.argv[2]


def _visible(path):
    return not path.startswith('/org/bluez/hci') or path == KEEP or path.startswith(KEEP + '/')


class OneAdapterInterface(dbus.Interface):
    """dbus.Interface whose GetManagedObjects hides every adapter but KEEP."""

    def GetManagedObjects(self, *args, **kwargs):
        objects = dbus.Interface.__getattr__(self, 'GetManagedObjects')(*args, **kwargs)
        return dbus.Dictionary({p: i for p, i in objects.items() if _visible(str(p))},
                               signature=objects.signature)


dbus.Interface = OneAdapterInterface
sys.argv = [SCRIPT] + sys.argv[3:]
runpy.run_path(SCRIPT, run_name='__main__')
