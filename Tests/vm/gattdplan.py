# SPDX-License-Identifier: MIT
"""The gattd plan: what gattd's JSON configuration says, checked by a real central.

Every expectation comes from the configuration file: the first enabled advertisement
(local name or alias, service UUIDs, manufacturer and service data), the alias, service,
characteristic and descriptor UUIDs and flags, initial values, minLength/maxLength, which
characteristics are read-only and which notify. Only the ATT error names are BlueZ 5.66's own (see central.py).
"""
import base64
import json
import os
import struct

import dbus

from bluezcentral import Central, CheckFailed, full_uuid, short, step

# The bluetoothd version the guest runs (run-guest --bluez).
BLUEZ = os.environ.get('GATTD_VM_BLUEZ', '5.66')


def bluez_at_least(major, minor):
    """True when the guest's bluetoothd (GATTD_VM_BLUEZ) is MAJOR.MINOR or later."""
    return tuple(int(n) for n in BLUEZ.split('.')) >= (major, minor)

# Services bluetoothd itself serves on every adapter (GAP, GATT, Device Information).
STACK_SERVICES = {full_uuid('1800'), full_uuid('1801'), full_uuid('180a')}
# Flags BlueZ's client adds to what the server declared.
DERIVED_FLAGS = {'extended-properties'}

_INT_FORMATS = {'uint8': '<B', 'uint16': '<H', 'uint32': '<I', 'uint64': '<Q',
                'int8': '<b', 'int16': '<h', 'int32': '<i', 'int64': '<q'}


def encode(value):
    """Returns the bytes a configured value stands for (an array is a concatenation)."""
    if isinstance(value, list):
        return b''.join(encode(part) for part in value)
    if not isinstance(value, dict) or len(value) != 1:
        raise CheckFailed('plan cannot read value %r' % (value,))
    kind, v = next(iter(value.items()))
    if kind == 'utf8':
        return v.encode()
    if kind == 'hex':
        return bytes.fromhex(v.replace(':', '').replace(' ', ''))
    if kind in _INT_FORMATS:
        return struct.pack(_INT_FORMATS[kind], v)
    if kind == 'bytes':
        return bytes(v)
    if kind == 'base64':
        return base64.b64decode(v + '=' * (-len(v) % 4))
    if kind in ('float32', 'float64'):
        return struct.pack('<f' if kind == 'float32' else '<d', v)
    raise CheckFailed('plan does not know value kind "%s"' % kind)


def show(value):
    """A short printable form of a value for the step lines."""
    try:
        text = value.decode()
        if len(text) > 1 and text.isprintable():
            return '"%s"' % (text if len(text) <= 24 else text[:21] + '...')
    except UnicodeDecodeError:
        pass
    return value.hex()


def check_tree(tree, config, verbose=True):
    """The served tree matches the config exactly (apart from bluetoothd's own services)."""
    want = {full_uuid(s['uuid']) for s in config['services']}
    have = set(tree) - STACK_SERVICES
    if want != have:
        raise CheckFailed('services %s, configured %s' % (sorted(map(short, have)),
                                                         sorted(map(short, want))))
    for svc in config['services']:
        served = tree[full_uuid(svc['uuid'])]['chrcs']
        want_c = {full_uuid(c['uuid']) for c in svc['characteristics']}
        if set(served) != want_c:
            raise CheckFailed('service %s has characteristics %s, configured %s'
                              % (svc['id'], sorted(map(short, served)), sorted(map(short, want_c))))
        for c in svc['characteristics']:
            got = served[full_uuid(c['uuid'])]
            flags = sorted(set(got['flags']) - DERIVED_FLAGS)
            if flags != sorted(c['flags']):
                raise CheckFailed('%s flags %s, configured %s' % (c['id'], flags, sorted(c['flags'])))
            for d in c.get('descriptors', []):
                if full_uuid(d['uuid']) not in got['descs']:
                    raise CheckFailed('%s has no descriptor %s (has %s)'
                                      % (c['id'], d['uuid'], sorted(map(short, got['descs']))))
            if verbose:
                step('  %s %s %s [%s]%s' % (svc['id'], c['id'], short(got['uuid']), ','.join(flags),
                     ''.join(' +%s' % d['uuid'] for d in c.get('descriptors', []))))


def characteristics(config):
    for svc in config['services']:
        for c in svc['characteristics']:
            yield svc, c


def enabled_advertisements(config):
    """The advertisements gattd registers at startup."""
    return [a for a in config.get('advertisements', []) if a.get('enabled', True)]


def advertised_name(config, adv):
    """The name a scanner should see: localName, or the alias through includes local-name."""
    if 'localName' in adv:
        return adv['localName']
    if 'local-name' in adv.get('includes', []):
        return config.get('alias')
    return None


def check_advertisement(dev, config, adv):
    """What a scanner saw (Device1 properties) matches advertisement `adv` of the config.
    A `localName` must arrive whole. The alias through `includes: local-name` is put in by
    the kernel, which shortens it to what fits (AD type 0x08, "gattd hear" for "gattd heart
    monitor"): the name seen must then be a non-empty start of the alias."""
    name = advertised_name(config, adv)
    seen_name = dev.get('Name', '')
    if 'localName' in adv:
        matches = seen_name == name
    else:
        matches = name is None or (seen_name != '' and name.startswith(seen_name))
    if not matches:
        raise CheckFailed('advertisement %s: local name "%s", configured "%s"'
                          % (adv.get('id', 'adv'), seen_name, name))
    seen = {str(u).lower() for u in dev.get('UUIDs', [])}
    want = {full_uuid(u) for u in adv.get('serviceUUIDs', [])}
    if not want <= seen:
        raise CheckFailed('advertisement %s: service UUIDs %s, configured %s'
                          % (adv.get('id', 'adv'), sorted(map(short, seen)), sorted(map(short, want))))
    mdata = {int(k): bytes(v) for k, v in dev.get('ManufacturerData', {}).items()}
    for company, value in adv.get('manufacturerData', {}).items():
        cid = int(company, 0) if company.lower().startswith('0x') else int(company)
        if mdata.get(cid) != encode(value):
            raise CheckFailed('advertisement %s: manufacturer data %s, configured 0x%04x=%s'
                              % (adv.get('id', 'adv'),
                                 {'0x%04x' % k: v.hex() for k, v in mdata.items()} or 'none',
                                 cid, encode(value).hex()))
    sdata = {str(k).lower(): bytes(v) for k, v in dev.get('ServiceData', {}).items()}
    for uuid, value in adv.get('serviceData', {}).items():
        if sdata.get(full_uuid(uuid)) != encode(value):
            raise CheckFailed('advertisement %s: service data %s, configured %s=%s'
                              % (adv.get('id', 'adv'), {short(k): v.hex() for k, v in sdata.items()},
                                 uuid, encode(value).hex()))
    step('advertisement %s: name "%s", service UUIDs %s, manufacturer data %s as configured'
         % (adv.get('id', 'adv'), dev.get('Name', ''), ' '.join(sorted(map(short, want))) or '-',
            ' '.join('0x%04x=%s' % (k, v.hex()) for k, v in sorted(mdata.items())) or '-'))


def find_and_connect(central, args, config):
    """Scans for the peripheral (checking gattd's advertisement when the config enables
    one), connects and returns the device path."""
    central.forget(args.peer)
    advs = enabled_advertisements(config) if args.gattd_advertises else []
    adv = advs[0] if advs else None

    def wanted(d):
        if str(d.get('Address', '')).upper() != args.peer.upper():
            return False
        if adv is None:
            return True
        # the name comes with the scan response, the rest with the advertising data
        return ((advertised_name(config, adv) is None or 'Name' in d) and
                (not adv.get('manufacturerData') or 'ManufacturerData' in d) and
                (not adv.get('serviceUUIDs') or 'UUIDs' in d))
    what = 'peripheral %s' % args.peer
    if adv is not None:
        what += ' advertising %s' % adv.get('id', 'adv')
    path, dev = central.discover(wanted, what=what)
    step('found %s (advertised name "%s")' % (dev['Address'], dev.get('Name', '')))
    if adv is not None:
        check_advertisement(dev, config, adv)
    central.connect(path)
    step('connected')
    return path


def gattd_plan(args):
    with open(args.config) as f:
        config = json.load(f)
    central = Central(args.adapter, timeout=args.timeout)
    central.power_on()
    path = find_and_connect(central, args, config)

    alias = config.get('alias')
    if alias:
        # bluetoothd reads the GAP Device Name after service discovery, then updates Name
        seen = []

        def named():
            seen.append(central.prop(path, 'org.bluez.Device1', 'Name'))
            return seen[-1] == alias
        try:
            central.pump_until(named, 15, 'device name "%s"' % alias)
        except CheckFailed:
            raise CheckFailed('device name "%s" after connecting, configured alias "%s"'
                              % (seen[-1], alias))
        name = seen[-1]
        step('device name "%s" (the configured alias)' % name)

    tree = central.gatt_tree(path)
    step('services discovered: %s' % ' '.join(sorted(short(u) for u in tree)))
    check_tree(tree, config)
    step('services, characteristics, descriptors and flags as configured')

    def served(svc, c):
        return tree[full_uuid(svc['uuid'])]['chrcs'][full_uuid(c['uuid'])]

    # reads of every readable value and descriptor; long values need offsets (MTU 100)
    long_reads, mtu = 0, 0
    for svc, c in characteristics(config):
        chrc = served(svc, c)
        if 'read' in c['flags'] and 'value' in c:
            want = encode(c['value'])
            got = central.read(chrc['path'])
            if got != want:
                raise CheckFailed('read %s = %s (%d bytes), configured %s (%d bytes)'
                                  % (c['id'], show(got), len(got), show(want), len(want)))
            mtu = int(central.prop(chrc['path'], 'org.bluez.GattCharacteristic1', 'MTU'))
            # one ATT Read carries at most MTU-1 bytes: more means Read Blob with offsets
            long_read = len(got) > mtu - 1
            long_reads += long_read
            step('read %s %s = %s%s' % (c['id'], short(chrc['uuid']), show(got),
                 ' (%d bytes, whole value, ATT MTU %d: read with offsets)' % (len(got), mtu)
                 if long_read else ''))
        for d in c.get('descriptors', []):
            if 'read' in d.get('flags', []) and 'value' in d:
                got = central.read(chrc['descs'][full_uuid(d['uuid'])],
                                   interface='org.bluez.GattDescriptor1')
                if got != encode(d['value']):
                    raise CheckFailed('descriptor %s of %s = %s, configured %s'
                                      % (d['uuid'], c['id'], show(got), show(encode(d['value']))))
                step('read descriptor %s of %s = %s' % (d['uuid'], c['id'], show(got)))

    if args.long_read and not long_reads:
        raise CheckFailed('no read needed offsets: no configured value is longer than ATT MTU-1 '
                          '(%d); run bluetoothd with configs/bluetoothd-main.conf' % (mtu - 1))

    for svc, c in characteristics(config):
        chrc = served(svc, c)
        writable = 'write' in c['flags']
        if writable:
            lo, hi = c.get('minLength', 0), c.get('maxLength', 512)
            new = (b'vm-written-value-' * 40)[:max(lo, min(hi, 17))]
            if 'notify' in c['flags']:
                central.subscribe(chrc['path'])
            central.write(chrc['path'], new)
            if 'read' in c['flags']:
                back = central.read(chrc['path'])
                if back != new:
                    raise CheckFailed('wrote %s to %s, read back %s' % (show(new), c['id'], show(back)))
                step('wrote %s to %s, read back the same' % (show(new), c['id']))
            if 'notify' in c['flags']:
                values = central.wait_notifications(chrc['path'], 1, what='notification of %s' % c['id'])
                if new not in values:
                    raise CheckFailed('notifications of %s were %s, expected %s'
                                      % (c['id'], [show(v) for v in values], show(new)))
                step('notification of %s while subscribed = %s' % (c['id'], show(new)))
                central.unsubscribe(chrc['path'])
            if 'maxLength' in c:
                too_long = b'x' * (hi + 1)
                central.expect_dbus_error(lambda: central.write(chrc['path'], too_long),
                                          'org.bluez.Error.InvalidArguments', 'Invalid Length',
                                          'write of %d bytes to %s (maxLength %d)' % (hi + 1, c['id'], hi))
                step('write of %d bytes to %s (maxLength %d) -> ATT 0x0D' % (hi + 1, c['id'], hi))
            if lo > 0:
                central.expect_dbus_error(lambda: central.write(chrc['path'], b'y' * (lo - 1)),
                                          'org.bluez.Error.InvalidArguments', 'Invalid Length',
                                          'write of %d bytes to %s (minLength %d)' % (lo - 1, c['id'], lo))
                step('write of %d bytes to %s (minLength %d) -> ATT 0x0D' % (lo - 1, c['id'], lo))
            if 'read' in c['flags']:
                back = central.read(chrc['path'])
                if back != new:
                    raise CheckFailed('%s changed to %s by rejected writes' % (c['id'], show(back)))
        elif not {'write-without-response', 'reliable-write',
                  'authenticated-signed-writes'} & set(c['flags']):
            # type=request makes BlueZ send the Write Request although the property is absent
            # (5.66). bluetoothd 5.82's client (and 5.87's) refuses some such writes itself,
            # without sending anything (NotAuthorized): then nothing reached gattd, which the
            # read-back shows; gattd's own 0x03 is checked on the others.
            try:
                central.write(chrc['path'], b'\x01', write_type='request')
                raise CheckFailed('write to read-only %s succeeded' % c['id'])
            except dbus.DBusException as e:
                error = (e.get_dbus_name(), e.get_dbus_message())
            if error == ('org.bluez.Error.NotPermitted', 'Write not permitted'):
                step('write to read-only %s -> ATT 0x03' % c['id'])
            elif error == ('org.bluez.Error.NotAuthorized', 'Operation Not Authorized') and bluez_at_least(5, 82):
                step('write to read-only %s refused by the central\'s bluetoothd %s before sending' % (c['id'], BLUEZ))
            else:
                raise CheckFailed('write to read-only %s: expected NotPermitted "Write not permitted", got %s "%s"'
                                  % (c['id'], error[0], error[1]))

    if args.live:
        from liveplan import live_checks
        live_checks(central, args, config, served)
    central.disconnect(path)
    step('disconnected')


def gattd_again_plan(args):
    """After a restart (gattd, bluetoothd, the adapter's power): the advertisement is
    found again, the services are as configured and the value written before is back.
    With --fresh the central writes that value first (and reads it back)."""
    from liveplan import check_persisted, leave_persisted
    with open(args.config) as f:
        config = json.load(f)
    central = Central(args.adapter, timeout=args.timeout)
    central.power_on()
    path = find_and_connect(central, args, config)
    tree = central.gatt_tree(path)
    check_tree(tree, config, verbose=False)
    step('services, characteristics, descriptors and flags as configured')
    def served(svc, c):
        return tree[full_uuid(svc['uuid'])]['chrcs'][full_uuid(c['uuid'])]
    if args.fresh:
        leave_persisted(central, config, served)
        check_persisted(central, config, served, when='just now')
    else:
        check_persisted(central, config, served)
    central.disconnect(path)
    step('disconnected')
