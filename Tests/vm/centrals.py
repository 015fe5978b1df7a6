#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""centrals.py: two real centrals on gattd at once (hci1 and hci2 of the guest's one
bluetoothd), run by scenarios/gattd-centrals.sh with configs/centrals.json:

  1. hci2 first holds a link to hci3 (btvirt gives the peripheral the central's connection
     handle: two centrals' first links would both be handle 1 at hci0); hci1 connects to
     gattd, then hci2 finds gattd advertising again and connects too;
  2. both subscribe at the same moment to `feed` (acquireNotify) and `sig` (signals); each
     gets every value exactly once and in order;
  3. `gattctl centrals --json` lists both with the MTU each central's bluetoothd reports;
  4. `gattctl set feed --to <hci1>` reaches hci1 and not hci2 where bluetoothd gives each
     central its own socket (5.79+), and is refused with CannotTarget (gattctl exit 5) on 5.66;
  5. both read `long` (300 bytes, answered by a handler program, longer than MTU-1) at the
     same moment: each gets one whole answer of the handler;
  6. hci2 unsubscribes from `feed`: hci1 keeps receiving; `gattctl disconnect <hci2>`
     drops hci2, hci1 stays connected and keeps receiving;
  7. hci1 leaves too: `gattctl list --json` shows feed (no socket) and sig not subscribed;
  8. bondedOnly: hci1 connects again and pairs, the pairing window closes, hci2 (a stranger)
     connects again and is dropped, while hci1 stays connected, notified and served. (Only
     now: bluetoothd keeps a bonded central's subscriptions after it leaves, feed's 5.66
     shared socket included, for its next connection.)

usage: centrals.py --gattctl BIN --gattd-log FILE --handler-log FILE --bluez VERSION
                   --central2 ADDR --holder ADDR [--adapter hci1] [--peer ADDR]
"""
import json
import os
import re
import struct
import subprocess
import sys
import time

import dbus
import dbus.service

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import (CHRC, DEVICE, CheckFailed, Central, at_address, peer_arguments,  # noqa: E402
                          run, step)
from security import CentralAgent, register_agent  # noqa: E402

SERVICE = '12345678-1234-5678-1234-56789abce000'
UUIDS = {'feed': '12345678-1234-5678-1234-56789abce001', 'sig': '12345678-1234-5678-1234-56789abce002',
         'long': '12345678-1234-5678-1234-56789abce003'}
MARKER = 0xfffffff0   # the targeted value; the counters (5 a second from 0, max 2^32-1) never get near it
LONG = 300


class HolderAdvertisement(dbus.service.Object):
    """A connectable advertisement on hci3, only so that hci2 can hold a link there."""
    PATH = '/org/gattd/test/holder_adv'

    def __init__(self, bus):
        super().__init__(bus, self.PATH)

    @dbus.service.method('org.freedesktop.DBus.Properties', in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface):
        return dbus.Dictionary({'Type': 'peripheral', 'LocalName': 'holder'}, signature='sv')

    @dbus.service.method('org.bluez.LEAdvertisement1', in_signature='', out_signature='')
    def Release(self):
        pass


def counters(values):
    """The uint32 values, the targeted marker left out."""
    return [v for v in (struct.unpack('<I', b)[0] for b in values) if v != MARKER]


def expect_in_order(name, values):
    """Every value once and in order: consecutive counter values, no repeat, no gap."""
    got = counters(values)
    bad = [(a, b) for a, b in zip(got, got[1:]) if b != a + 1]
    if bad:
        raise CheckFailed('%s: values not each once and in order (expected consecutive), got %s'
                          % (name, got[:40]))
    return got


def plan(args):
    c1 = Central.fresh(args.adapter, args.peer)
    c2 = Central.fresh('hci2', args.peer)
    holder = Central('hci3')
    holder.power_on()

    def gattctl(*words, check=True):
        done = subprocess.run([args.gattctl] + list(words), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=60)
        if check and done.returncode != 0:
            raise CheckFailed('gattctl %s exited %d: %s' % (' '.join(words), done.returncode, done.stderr.strip()))
        return done

    def log_count(path, pattern):
        with open(path, errors='replace') as f:
            return len(re.findall(pattern, f.read(), re.M))

    # 1. connections
    adv = HolderAdvertisement(c1.bus)
    holder.call(holder.adapter_path, 'org.bluez.LEAdvertisingManager1', 'RegisterAdvertisement',
                dbus.ObjectPath(adv.PATH), dbus.Dictionary({}, signature='sv'))
    c2.forget(args.holder)
    held, _ = c2.discover(at_address(args.holder), what='hci3 (%s)' % args.holder)
    c2.call(held, DEVICE, 'Connect', timeout=60)
    step('hci2 holds a link to hci3 (its next link gets another handle)')
    p1, _ = c1.discover(at_address(args.peer), what='gattd from hci1')
    c1.connect(p1)
    t_connected = time.monotonic()
    step('hci1 connected to gattd')
    c2.forget(args.peer)
    p2, _ = c2.discover(at_address(args.peer), what='gattd advertising again after hci1 connected')
    step('hci2 found gattd advertising %.1f s after hci1 connected (%d advertisement registrations in '
         'gattd\'s log)' % (time.monotonic() - t_connected, log_count(args.gattd_log, 'advertisement registered')))
    c2.connect(p2)
    step('hci2 connected to gattd: two centrals at once')
    ch1 = c1.characteristics(p1, SERVICE, UUIDS)
    ch2 = c2.characteristics(p2, SERVICE, UUIDS)

    # 2. both subscribe at the same moment
    for central, chrcs in ((c1, ch1), (c2, ch2)):
        for name in ('feed', 'sig'):
            central.notifications[chrcs[name]] = []
    c1.together([c.send(ch[n], CHRC, 'StartNotify', what='%s StartNotify %s' % (c.adapter_name, n))
                 for n in ('feed', 'sig') for c, ch in ((c1, ch1), (c2, ch2))])
    for c, ch in ((c1, ch1), (c2, ch2)):
        for n in ('feed', 'sig'):
            c.wait_notifications(ch[n], 10, timeout=30, what='%s values at %s' % (n, c.adapter_name))
    for c, ch in ((c1, ch1), (c2, ch2)):
        for n in ('feed', 'sig'):
            got = expect_in_order('%s at %s' % (n, c.adapter_name), c.notifications[ch[n]])
            step('%s at %s: %d values, each once and in order (%d...%d)' % (n, c.adapter_name, len(got), got[0], got[-1]))
    step('bluetoothd acquired %d notify sockets for feed; gattd closed %d lost shared ones'
         % (log_count(args.gattd_log, r'subscribed .*gatt\.id=feed.*path=socket'),
            log_count(args.gattd_log, r'closed the one it lost')))

    # 3. gattctl centrals --json
    listed = {c['address']: c for c in json.loads(gattctl('centrals', '--json').stdout)}
    per_device = args.bluez >= (5, 71)
    for c, ch, address in ((c1, ch1, args.central1), (c2, ch2, args.central2)):
        mtu = int(c.prop(ch['feed'], CHRC, 'MTU'))
        entry = listed.get(address)
        if entry is None or entry['mtu'] != mtu or entry['maxUpdateLength'] != mtu - 3:
            raise CheckFailed('gattctl centrals --json: expected %s with mtu %d, maxUpdateLength %d; got %s'
                              % (address, mtu, mtu - 3, sorted(listed.values(), key=str)))
        want = ['feed'] if per_device else None
        if entry['subscribed'] != want:
            raise CheckFailed('gattctl centrals --json: %s subscribed %s, expected %s on %s'
                              % (address, entry['subscribed'], want, args.bluez_text))
    if len(listed) != 2:
        raise CheckFailed('gattctl centrals --json lists %d centrals, expected 2: %s' % (len(listed), listed))
    step('gattctl centrals --json: both, mtu %s, subscribed %s'
         % ([listed[a]['mtu'] for a in sorted(listed)], [listed[a]['subscribed'] for a in sorted(listed)]))

    # 4. a value to hci1 only
    feed1, feed2 = ch1['feed'], ch2['feed']
    done = gattctl('set', 'feed', '--hex', struct.pack('<I', MARKER).hex(), '--to', args.central1, check=False)
    if args.bluez >= (5, 79):
        if done.returncode != 0:
            raise CheckFailed('gattctl set feed --to %s exited %d on %s, expected 0: %s'
                              % (args.central1, done.returncode, args.bluez_text, done.stderr.strip()))
        c1.pump_until(lambda: struct.pack('<I', MARKER) in c1.notifications[feed1], 30,
                      'the targeted value at hci1')
        after = counters(c1.notifications[feed1])[-1]
        step('the targeted value reached hci1 (after counter %d)' % after)
    else:
        if done.returncode != 5 or 'cannot reach chosen centrals' not in done.stderr:
            raise CheckFailed('gattctl set feed --to %s on %s: expected exit 5 (CannotTarget) "cannot reach '
                              'chosen centrals", got exit %d: %s'
                              % (args.central1, args.bluez_text, done.returncode, done.stderr.strip()))
        after = max(counters(c1.notifications[feed1])[-1], counters(c2.notifications[feed2])[-1])
        step('gattctl set --to refused on %s: %s' % (args.bluez_text, done.stderr.strip()))
    for c, feed in ((c1, feed1), (c2, feed2)):
        c.pump_until(lambda: counters(c.notifications[feed])[-1] >= after + 3, 30,
                     'feed values after %d at %s' % (after + 3, c.adapter_name))
    if struct.pack('<I', MARKER) in c2.notifications[feed2]:
        raise CheckFailed('hci2 received the value sent to hci1 only')
    if args.bluez < (5, 79) and struct.pack('<I', MARKER) in c1.notifications[feed1]:
        raise CheckFailed('a refused targeted value reached hci1')
    for c, feed in ((c1, feed1), (c2, feed2)):
        expect_in_order('feed at %s' % c.adapter_name, c.notifications[feed])
    step('hci2 did not receive it (%s); both feeds still in order' % ('targeted' if args.bluez >= (5, 79) else 'refused'))

    # 5. interleaved long reads of a handler's value
    reads_before = log_count(args.handler_log, r'^read long offset=0$')
    v1, v2 = c1.together([c.send(ch['long'], CHRC, 'ReadValue', dbus.Dictionary({}, signature='sv'),
                                 what='%s ReadValue long' % c.adapter_name) for c, ch in ((c1, ch1), (c2, ch2))])
    mtu = int(c1.prop(ch1['long'], CHRC, 'MTU'))
    for c, value in ((c1, bytes(v1)), (c2, bytes(v2))):
        n = value.split(b';', 1)[0]
        whole = ((n + b';') * LONG)[:LONG] if n.isdigit() else None
        if len(value) != LONG or value != whole:
            raise CheckFailed('long at %s: expected one answer of %d bytes ("<n>;" repeated), got %d bytes %r'
                              % (c.adapter_name, LONG, len(value), value[:60]))
    reads = log_count(args.handler_log, r'^read long offset=0$') - reads_before
    if reads != 2 or log_count(args.handler_log, r'^read long offset=[1-9]'):
        raise CheckFailed('the handler was asked %d times at offset 0 (expected 2) or at other offsets: %s'
                          % (reads, open(args.handler_log).read()[-400:]))
    step('both read long (%d bytes, MTU %d) at once: answers %s and %s, each whole'
         % (LONG, mtu, bytes(v1)[:4], bytes(v2)[:4]))

    # 6. one leaves, the other keeps receiving
    def keeps_receiving(what, count=3):
        for name in ('feed', 'sig'):
            path = ch1[name]
            had = len(c1.notifications[path])
            c1.pump_until(lambda: len(c1.notifications[path]) >= had + count, 30,
                          '%d more %s values at hci1 (%s)' % (count, name, what))
            expect_in_order('%s at hci1' % name, c1.notifications[path])
        step('hci1 keeps receiving feed and sig, in order (%s)' % what)

    c2.unsubscribe(feed2)
    keeps_receiving('hci2 unsubscribed from feed')
    gattctl('disconnect', args.central2)
    c2.pump_until(lambda: not c2.prop(p2, DEVICE, 'Connected'), 30, 'hci2 dropped by gattctl disconnect')
    if not c1.prop(p1, DEVICE, 'Connected'):
        raise CheckFailed('gattctl disconnect %s dropped hci1 too' % args.central2)
    keeps_receiving('gattctl disconnect dropped hci2')
    listed = [c['address'] for c in json.loads(gattctl('centrals', '--json').stdout)]
    if listed != [args.central1]:
        raise CheckFailed('after disconnecting hci2 gattctl centrals lists %s, expected [%s]' % (listed, args.central1))

    # 7. the last one leaves (before any bond: a bonded central's subscriptions outlive its link)
    c1.disconnect(p1)

    def listed():
        return {e['id']: e for e in map(json.loads, gattctl('list', '--json').stdout.splitlines())}

    def nobody():
        now = listed()
        return not now['feed']['subscribed'] and now['feed']['notifySockets'] == 0 and not now['sig']['subscribed']
    c1.pump_until(nobody, 30, 'gattctl list --json to show feed (no socket) and sig not subscribed after both left')
    step('both left: gattctl list shows feed and sig not subscribed, no socket')

    # 8. bondedOnly. hci1 connects again (its bluetoothd subscribes it again, as it stayed
    # subscribed at its end) and pairs; the window closes; hci2 is then a stranger.
    for name in ('feed', 'sig'):
        c1.notifications[ch1[name]] = []
    c1.connect(p1)
    keeps_receiving('connected again, subscriptions renewed by its bluetoothd')
    agent = CentralAgent(c1.bus)
    register_agent(c1, agent, 'KeyboardDisplay')
    try:
        c1.call(p1, DEVICE, 'Pair', timeout=60)
    except dbus.DBusException as e:
        raise CheckFailed('hci1 Pair failed: %s: %s' % (e.get_dbus_name(), e.get_dbus_message()))
    step('hci1 paired (just works) on its open link')
    closes = log_count(args.gattd_log, 'pairing closed')
    gattctl('pairing', 'open', '1')
    c1.pump_until(lambda: log_count(args.gattd_log, 'pairing closed') > closes, 30, 'the pairing window to close')
    drops = log_count(args.gattd_log, 'disconnecting a central that is not bonded')
    try:
        c2.call(p2, DEVICE, 'Connect', timeout=30)
    except dbus.DBusException as e:
        step('hci2 connect ended with %s: %s' % (e.get_dbus_name(), e.get_dbus_message()))
    c2.pump_until(lambda: log_count(args.gattd_log, 'disconnecting a central that is not bonded') > drops
                  and not c2.prop(p2, DEVICE, 'Connected'), 30, 'gattd to drop hci2 (bondedOnly)')
    step('hci2 (no bond, pairing closed) connected and was dropped by gattd')
    if not c1.prop(p1, DEVICE, 'Connected'):
        raise CheckFailed('the bonded hci1 lost its link when gattd dropped hci2')
    keeps_receiving('bonded, while gattd dropped the stranger')
    value = bytes(c1.read(ch1['long']))
    if len(value) != LONG:
        raise CheckFailed('the bonded hci1 read long as %d bytes, expected %d' % (len(value), LONG))
    step('the bonded hci1 is still served (read long, %d bytes)' % len(value))
    c1.disconnect(p1)
    c2.disconnect(held)


def main():
    parser = peer_arguments(__doc__)
    parser.add_argument('--gattctl', required=True)
    parser.add_argument('--gattd-log', required=True)
    parser.add_argument('--handler-log', required=True)
    parser.add_argument('--bluez', required=True, help='the bluetoothd version, e.g. 5.66')
    parser.add_argument('--central1', required=True, help="hci1's address")
    parser.add_argument('--central2', required=True, help="hci2's address")
    parser.add_argument('--holder', required=True, help="hci3's address")
    args = parser.parse_args()
    args.bluez_text = 'bluetoothd ' + args.bluez
    args.bluez = tuple(int(p) for p in args.bluez.split('.'))
    run(lambda: plan(args))


if __name__ == '__main__':
    main()
