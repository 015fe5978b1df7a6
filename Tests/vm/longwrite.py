#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""longwrite.py: long writes through the real bluetoothd, run by scenarios/gattd-longwrite.sh
with configs/longwrite.json, once per ATT MTU (bluetoothd's [GATT] ExchangeMTU):

  1. the link's MTU is the expected one (GattCharacteristic1.MTU);
  2. 200 bytes (longer than MTU-3, so Prepare Write requests and an Execute Write) to
     `plain`, to `decided` (a deciding onWrite hook) and to `handled` (a handler program):
     each is stored whole (read back for plain and decided, `gattctl get` for all three);
  3. the deciding hook refuses 200 bytes starting with ff (exit 131): the central gets
     application error 0x83 and the value stays;
  4. 201 bytes (maxLength is 200) to each: the central gets ATT 0x0D as a BlueZ central
     reports it (org.bluez.Error.InvalidArguments "Invalid Length") and nothing is stored.

The hook's and the handler's logs are checked by the scenario (one call per long write, at
offset 0, with the whole value).

usage: longwrite.py --gattctl PATH --mtu N [--adapter hci1] [--peer ADDR]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import CHRC, Central, CheckFailed, peer_arguments, run, step  # noqa: E402
from central import att_app_error  # noqa: E402

SERVICE = '12345678-1234-5678-1234-56789abcd000'
CHRCS = {'plain': '12345678-1234-5678-1234-56789abcd001',
         'decided': '12345678-1234-5678-1234-56789abcd002',
         'handled': '12345678-1234-5678-1234-56789abcd003'}
INVALID_LENGTH = ('org.bluez.Error.InvalidArguments', 'Invalid Length')


def pattern(seed, length):
    """`length` bytes, different for every seed and characteristic, never starting with ff."""
    return bytes((seed + 7 * i) % 251 for i in range(length))


def gattctl_get(gattctl, ident):
    got = subprocess.run([gattctl, 'get', ident, '--json'], capture_output=True, text=True, timeout=30)
    if got.returncode != 0:
        raise CheckFailed('gattctl get %s failed (%d): %s' % (ident, got.returncode, got.stderr.strip()))
    hexdigits = json.loads(got.stdout)['hex']
    return bytes.fromhex(hexdigits[2:] if hexdigits.startswith('0x') else hexdigits)


def plan(args):
    central, path = Central.connected(args.adapter, args.peer, what='gattd\'s advertisement')
    paths = central.characteristics(path, SERVICE, CHRCS)
    mtu = int(central.prop(paths['plain'], CHRC, 'MTU'))
    if mtu != args.mtu:
        raise CheckFailed('ATT MTU %d, expected %d (bluetoothd\'s ExchangeMTU)' % (mtu, args.mtu))
    step('connected, ATT MTU %d: 200 bytes need Prepare Write requests of at most %d bytes each'
         % (mtu, mtu - 5))

    stored = {}
    for n, ident in enumerate(CHRCS):
        value = pattern(args.mtu + n, 200)
        central.write(paths[ident], value)
        stored[ident] = value
        if ident != 'handled':  # the handler answers reads of `handled`, not the stored value
            back = central.read(paths[ident])
            if back != value:
                raise CheckFailed('%s reads back %d bytes %s..., expected the 200 written %s...'
                                  % (ident, len(back), back[:8].hex(), value[:8].hex()))
        got = gattctl_get(args.gattctl, ident)
        if got != value:
            raise CheckFailed('gattctl get %s = %d bytes %s..., expected the 200 written %s...'
                              % (ident, len(got), got[:8].hex(), value[:8].hex()))
        step('long write of 200 bytes to %s stored whole (%s, gattctl get)'
             % (ident, 'read back' if ident != 'handled' else 'handler accepted'))

    refused = b'\xff' + pattern(args.mtu + 9, 199)
    central.expect_dbus_error(lambda: central.write(paths['decided'], refused), *att_app_error(0x83),
                              what='200 bytes starting with ff to decided')
    if central.read(paths['decided']) != stored['decided'] or gattctl_get(args.gattctl, 'decided') != stored['decided']:
        raise CheckFailed('decided changed after the hook refused the long write')
    step('the deciding hook refused a long write (application error 0x83); decided unchanged')

    for ident in CHRCS:
        central.expect_dbus_error(lambda: central.write(paths[ident], pattern(args.mtu + 20, 201)), *INVALID_LENGTH,
                                  what='201 bytes to %s (maxLength 200)' % ident)
        if gattctl_get(args.gattctl, ident) != stored[ident]:
            raise CheckFailed('%s changed after a refused 201-byte write' % ident)
        if ident != 'handled' and central.read(paths[ident]) != stored[ident]:
            raise CheckFailed('%s reads back changed after a refused 201-byte write' % ident)
    step('201 bytes (over maxLength) in pieces to each: ATT 0x0D at the central, nothing stored')
    central.disconnect(path)
    step('disconnected')


def main():
    parser = peer_arguments(__doc__)
    parser.add_argument('--gattctl', required=True)
    parser.add_argument('--mtu', type=int, required=True)
    args = parser.parse_args()
    run(lambda: plan(args))


if __name__ == '__main__':
    main()
