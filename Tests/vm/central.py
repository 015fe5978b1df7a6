#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""central.py PLAN [options]: the real central's checks, one printed line per step.

Plans:
  bluez-example           BlueZ's own example-gatt-server + example-advertisement
  gattd --config FILE     what gattd's JSON config says, checked over the air (with --live
                          also hooks, timers, gattctl, indications; leaves a value to persist)
  gattd-again --config FILE  after a restart: advertisement, services and the persisted value

Exits 0 when every check held, 1 on the first failed check (with a FAIL: line).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import (Central, CheckFailed, full_uuid, run, short, step)  # noqa: E402
from gattdplan import gattd_again_plan, gattd_plan  # noqa: E402

# What BlueZ 5.66's client (src/gatt-client.c create_gatt_dbus_error) makes of ATT errors.
ATT_INVALID_LENGTH = ('org.bluez.Error.InvalidArguments', 'Invalid Length')          # 0x0D
ATT_WRITE_NOT_PERMITTED = ('org.bluez.Error.NotPermitted', 'Write not permitted')    # 0x03


def att_app_error(code):
    """The D-Bus error a 5.66 central reports for application error `code` (0x80-0x9F)."""
    return ('org.bluez.Error.Failed', 'Operation failed with ATT error: 0x%02x' % code)


def expect_chrc(tree, service, uuid, flags):
    svc = tree.get(full_uuid(service))
    if svc is None:
        raise CheckFailed('service %s missing; have %s'
                          % (service, ', '.join(short(u) for u in tree)))
    c = svc['chrcs'].get(full_uuid(uuid))
    if c is None:
        raise CheckFailed('characteristic %s missing in %s' % (uuid, service))
    if sorted(c['flags']) != sorted(flags):
        raise CheckFailed('characteristic %s flags %s, expected %s' % (uuid, c['flags'], flags))
    return c


def bluez_example(args):
    central = Central(args.adapter, timeout=args.timeout)
    central.power_on()
    central.forget(args.peer)

    def is_example(dev):
        return str(dev.get('Address', '')).upper() == args.peer.upper() and \
            dev.get('Name') == 'TestAdvertisement'
    path, dev = central.discover(is_example, what='TestAdvertisement')
    uuids = sorted(short(str(u)) for u in dev.get('UUIDs', []))
    if not {'180d', '180f'} <= set(uuids):
        raise CheckFailed('advertised service UUIDs %s, expected 180d and 180f' % uuids)
    mdata = {int(k): bytes(v) for k, v in dev.get('ManufacturerData', {}).items()}
    if mdata.get(0xffff) != bytes([0, 1, 2, 3]):
        raise CheckFailed('manufacturer data %r, expected {0xffff: 00010203}' % mdata)
    step('found TestAdvertisement at %s: services %s, manufacturer ffff=00010203'
         % (dev['Address'], ' '.join(uuids)))

    central.connect(path)
    step('connected')
    tree = central.gatt_tree(path)
    step('services discovered: %s' % ' '.join(sorted(short(u) for u in tree)))
    hrm = expect_chrc(tree, '180d', '2a37', ['notify'])
    bsl = expect_chrc(tree, '180d', '2a38', ['read'])
    cp = expect_chrc(tree, '180d', '2a39', ['write'])
    bat = expect_chrc(tree, '180f', '2a19', ['read', 'notify'])
    test = expect_chrc(tree, '12345678-1234-5678-1234-56789abcdef0',
                       '12345678-1234-5678-1234-56789abcdef1',
                       ['read', 'write', 'extended-properties', 'writable-auxiliaries'])
    if full_uuid('2901') not in test['descs']:
        raise CheckFailed('test characteristic has no 2901 descriptor')
    step('characteristics and properties as served')

    value = central.read(bsl['path'])
    if value != b'\x01':
        raise CheckFailed('read 2a38 = %s, expected 01' % value.hex())
    step('read 2a38 = %s' % value.hex())
    level = central.read(bat['path'])
    if len(level) != 1 or level[0] > 100:
        raise CheckFailed('read 2a19 = %s, expected one byte <= 100' % level.hex())
    step('read 2a19 = %d' % level[0])
    cud = central.read(test['descs'][full_uuid('2901')], interface='org.bluez.GattDescriptor1')
    step('read descriptor 2901 = "%s"' % cud.decode())

    written = b'gattd-vm was here'
    central.write(test['path'], written)
    back = central.read(test['path'])
    if back != written:
        raise CheckFailed('read back %r after writing %r' % (back, written))
    step('wrote "%s", read back the same' % written.decode())

    central.expect_dbus_error(lambda: central.write(cp['path'], b'\x01\x02'), *ATT_INVALID_LENGTH)
    step('write 2 bytes to 2a39 -> ATT 0x0D (%s)' % ATT_INVALID_LENGTH[0])
    central.expect_dbus_error(lambda: central.write(cp['path'], b'\x02'), *att_app_error(0x80))
    step('write 02 to 2a39 -> application error 0x80')
    central.expect_dbus_error(lambda: central.write(bsl['path'], b'\x02', write_type='request'),
                              *ATT_WRITE_NOT_PERMITTED)
    step('write to read-only 2a38 -> ATT 0x03 (%s)' % ATT_WRITE_NOT_PERMITTED[0])

    central.subscribe(hrm['path'])
    values = central.wait_notifications(hrm['path'], 3, timeout=30, what='heart-rate notifications')
    step('subscribed to 2a37: %s' % ' '.join(v.hex() for v in values[:3]))
    central.unsubscribe(hrm['path'])
    central.subscribe(bat['path'])
    values = central.wait_notifications(bat['path'], 2, timeout=30, what='battery notifications')
    if values[1][0] >= values[0][0] and values[0][0] > 0:
        raise CheckFailed('battery level did not drain: %s' % [v[0] for v in values])
    step('subscribed to 2a19: %s' % ' '.join(str(v[0]) for v in values[:2]))
    central.unsubscribe(bat['path'])
    central.disconnect(path)
    step('disconnected')


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('plan', choices=['bluez-example', 'gattd', 'gattd-again'])
    parser.add_argument('--adapter', default='hci1', help='the central adapter (default hci1)')
    parser.add_argument('--peer', default='00:AA:01:00:00:00',
                        help='the peripheral address (default hci0 of btvirt)')
    parser.add_argument('--config', help='gattd JSON configuration (plan gattd)')
    parser.add_argument('--no-long-read', dest='long_read', action='store_false',
                        help='plan gattd: do not require a read that needs offsets')
    parser.add_argument('--timeout', type=float, default=30.0, help='per-operation bound')
    parser.add_argument('--no-advertisement', dest='gattd_advertises', action='store_false',
                        help='do not check the config\'s advertisement (another program advertises)')
    parser.add_argument('--live', action='store_true',
                        help='plan gattd: also hooks, timers, gattctl set, indications')
    parser.add_argument('--fresh', action='store_true',
                        help='plan gattd-again: write the value to persist first')
    parser.add_argument('--gattctl', default='gattctl', help='gattctl binary (for --live)')
    parser.add_argument('--gattd-log', help='gattd\'s log, at debug level (for --live)')
    parser.add_argument('--reject', action='append', default=[], metavar='ID=HEXPREFIX:CODE',
                        help='the deciding hook of ID rejects values starting with HEXPREFIX '
                             'with exit CODE (ATT error CODE)')
    args = parser.parse_args()
    if args.plan == 'bluez-example':
        run(lambda: bluez_example(args))
    else:
        if not args.config:
            parser.error('plan %s needs --config' % args.plan)
        if args.live and not args.gattd_log:
            parser.error('--live needs --gattd-log')
        run(lambda: (gattd_plan if args.plan == 'gattd' else gattd_again_plan)(args))


if __name__ == '__main__':
    main()
