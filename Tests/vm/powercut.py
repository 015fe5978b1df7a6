#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""powercut.py: the central's half of the power-cut test (scenarios/gattd-powercut.sh).

Connects from hci1 to gattd on hci0, then writes the characteristic `central` of
configs/powercut.json with write requests (a reply for each, which gattd sends only once
the value is on the disk), one increasing uint32 after another, starting after --start.
After each write that was acknowledged it appends "acked N" to --ledger with an unbuffered
write, so that the line is on the host (the results share) before the next write starts:
a power cut can lose a write that was not yet acknowledged, never a line of the ledger.
Runs until killed (the guest loses power), or until the file --stop exists: then it ends
after its last write was acknowledged, so that nothing is under way.
"""
import argparse
import os
import struct
import sys

import dbus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import Central, CheckFailed, step  # noqa: E402

CENTRAL_UUID = '9c0de001-1234-5678-1234-56789abc0000'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--adapter', default='hci1')
    ap.add_argument('--peer', required=True)
    ap.add_argument('--start', type=int, required=True, help='the last value acknowledged before')
    ap.add_argument('--ledger', required=True)
    ap.add_argument('--stop', required=True, help='ends before the next write once this exists')
    args = ap.parse_args()
    central = Central(args.adapter)
    central.power_on()
    central.forget(args.peer)
    path, _ = central.discover(lambda d: str(d.get('Address', '')).upper() == args.peer.upper(),
                               what='gattd (%s)' % args.peer)
    central.connect(path)
    chrc = None
    for service in central.gatt_tree(path).values():
        if CENTRAL_UUID in service['chrcs']:
            chrc = service['chrcs'][CENTRAL_UUID]['path']
    if chrc is None:
        raise CheckFailed('no characteristic %s on gattd' % CENTRAL_UUID)
    step('connected; writing from %d on' % (args.start + 1))
    ledger = os.open(args.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    value = args.start
    while not os.path.exists(args.stop):
        value += 1
        central.write(chrc, struct.pack('<I', value))
        os.write(ledger, b'acked %d\n' % value)
    step('stopped after %d' % value)


if __name__ == '__main__':
    try:
        main()
    except (CheckFailed, dbus.DBusException) as e:
        print('FAIL: %s' % e, flush=True)
        sys.exit(1)
