#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A central for gattd-systemd's sandbox check: connects to gattd serving
configs/sandbox.json and writes each characteristic named on the command line, expecting
success or an ATT application error from its deciding hook.

usage: sandbox-central.py --peer ADDR [--adapter hci1] ID=VALUEHEX:ok|0xNN ...
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import Central, CheckFailed, full_uuid, run, step  # noqa: E402

SERVICE = '12345678-1234-5678-1234-56789abc5a00'
UUIDS = {'device': '12345678-1234-5678-1234-56789abc5a01', 'file': '12345678-1234-5678-1234-56789abc5a02'}


def main(args):
    central = Central(args.adapter)
    central.power_on()
    central.forget(args.peer)
    path, _ = central.discover(lambda d: str(d.get('Address', '')).upper() == args.peer.upper(),
                               what='peripheral %s' % args.peer)
    central.connect(path)
    tree = central.gatt_tree(path)
    chrcs = tree.get(full_uuid(SERVICE), {}).get('chrcs')
    if not chrcs:
        raise CheckFailed('service %s not found' % SERVICE)
    for expectation in args.writes:
        name, rest = expectation.split('=', 1)
        value, outcome = rest.split(':', 1)
        chrc = chrcs[full_uuid(UUIDS[name])]['path']
        if outcome == 'ok':
            central.write(chrc, bytes.fromhex(value))
            step('write %s to %s: accepted by its hook' % (value, name))
        else:
            code = int(outcome, 16)
            central.expect_dbus_error(lambda: central.write(chrc, bytes.fromhex(value)), 'org.bluez.Error.Failed',
                                      'Operation failed with ATT error: 0x%02x' % code, what='write to ' + name)
            step('write %s to %s: refused by its hook with ATT error 0x%02x' % (value, name, code))
    central.disconnect(path)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--peer', required=True)
    parser.add_argument('--adapter', default='hci1')
    parser.add_argument('writes', nargs='+', metavar='ID=VALUEHEX:ok|0xNN')
    arguments = parser.parse_args()
    run(lambda: main(arguments))
