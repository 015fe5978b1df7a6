#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""instances.py: one central (hci2) served by two gattd instances, run by
scenarios/gattd-instances.sh: for each PEER=LABEL, the advertisement at PEER is found,
connected, and its `label` characteristic reads LABEL; the central writes `note` on the
last one only (the scenario then checks which instance saved it).

usage: instances.py --adapter hci2 PEER=LABEL...
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import Central, CheckFailed, at_address, run, step  # noqa: E402

SERVICE = '12345678-1234-5678-1234-56789abcd000'
LABEL = '12345678-1234-5678-1234-56789abcd001'
NOTE = '12345678-1234-5678-1234-56789abcd002'


def plan(args):
    peers = [item.split('=', 1) for item in args.peers]
    for index, (peer, label) in enumerate(peers):
        central = Central.fresh(args.adapter, peer)
        path, _ = central.discover(at_address(peer), what='the advertisement at %s' % peer)
        central.connect(path)
        chrcs = central.characteristics(path, SERVICE, {'label': LABEL, 'note': NOTE})
        value = central.read(chrcs['label'])
        if value != label.encode():
            raise CheckFailed('%s: label reads %r, expected %r' % (peer, value, label))
        step('%s: label = "%s" (its own instance)' % (peer, value.decode()))
        if index == len(peers) - 1:
            central.write(chrcs['note'], b'written to ' + peer.encode())
            step('%s: wrote note' % peer)
        central.disconnect(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--adapter', default='hci2')
    parser.add_argument('peers', nargs='+')
    args = parser.parse_args()
    run(lambda: plan(args))


if __name__ == '__main__':
    main()
