# SPDX-License-Identifier: MIT
"""A central that uses LE privacy as a phone does (the guest's hci1 on the same bluetoothd),
against gattd on hci0 serving configs/privacy.json (issue 31).

The central's controller gets an IRK (`btmgmt privacy on IRK`, with a power cycle, since the
kernel takes privacy only while powered off), so it connects from resolvable private
addresses (RPAs) and gives its identity (its public address and the IRK) when it bonds.
gattd's events come from `gattctl watch --json` (--watch FILE, started by the scenario), and
what a program would do goes through gattctl (--gattctl). Phases:

  first     find gattd, open pairing for a few seconds (--window), connect from an RPA (the
            `connected` event names it, type random), subscribe to `reply` (acquireNotify), pair (just works):
            the `address-changed` event names the RPA and the identity; `gattctl centrals`
            and `bonds` show the identity; its old RPA names nobody (`--to RPA` is "not
            connected"); values over the subscription made from the RPA (`prebond_values`);
            a write is reported with the identity; `gattctl disconnect IDENTITY` drops the link and the `disconnected`
            event names the identity. A program following only the events never meets an
            address it was not told.
  return    after the pairing window closed and gattd reloaded without `plain` (the
            attributes after it moved): a power cycle gives a new RPA, the central
            connects again (auto-connect, as phones do) and stays connected (bondedOnly
            keeps a bonded central), the `connected` event names the identity, it sees the
            reloaded table and reads `reply` at its new handle, gattd logs its return after
            the change it missed, `reply` is not subscribed until it subscribes, it
            subscribes to `reply` and `gattctl set reply --to IDENTITY` reaches it on a
            bluetoothd that targets sockets (5.82) and is refused as untargetable (never "not
            subscribed") on 5.66, where a value for all reaches it instead (first seen as the
            watch's `changed` event: each value differs from the one gattd holds, since an
            unchanged one is notified to nobody); once it unsubscribes `reply` is
            unsubscribed; `secret` (encrypt-read) reads without pairing again.
  repair    the central is reset: it forgets gattd, takes a new IRK (NEW_IRK, the same
            identity) and pairs again while a window is open. bluetoothd keeps two objects
            with the identity (bluez/bluez #1095); `gattctl bonds` lists it once, bonded and
            connected, `centrals` once; gattd logs both objects and removes neither; the
            encrypted read and a value for it alone work over the new keys (before 5.80
            bluetoothd holds values for the older object: --older-first).
  restarted after bluetoothd restarted: the same, `reply` is not subscribed before the
            central subscribes (no subscription survives the restart), and bluetoothd's
            object, also in `central-subscribed`, is now dev_<identity>, the only one with
            the identity, holding the newer bond (the central uses NEW_IRK).
  stranger  gattd forgot the bond (`gattctl bonds remove`): the central forgets gattd too
            and connects from an RPA; gattd (bondedOnly, pairing closed) drops it.
"""
import argparse
import json
import os
import re
import subprocess
import time

import dbus

from bluezcentral import CheckFailed, Central, bound, run, step
from watchevents import read_events, unannounced
from security import (BluetoothdLog, CentralAgent, auto_connect, auto_connect_end, btmgmt, chrcs, find, pair,
                      register_agent, wait_resolved)

SERVICE = '5ec0de00-1234-5678-1234-56789abc0031'
PLAIN, SECRET, REPLY, CMD = ('5ec0de0%d-1234-5678-1234-56789abc0031' % n for n in (1, 2, 3, 4))
# The central's IRK (16 bytes, hex), as a phone keeps one for its life; NEW_IRK, the one it
# takes when it is reset (phase repair): the same identity, a key gattd's side never saw.
IRK = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'
NEW_IRK = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'


class Watch:
    """The events `gattctl watch --json` wrote to a file, and a program's view of them."""

    def __init__(self, path):
        self.path = path

    def events(self):
        return read_events(self.path)

    def wait(self, central, what, after=0, **fields):
        """The first event after the first `after` with these fields (pumping the central's
        loop meanwhile); fails after a bound."""
        found = []

        def seen():
            for event in self.events()[after:]:
                if all(event.get(k) == v for k, v in fields.items()):
                    found.append(event)
                    return True
            return False
        central.pump_until(seen, 20, what)
        return found[0]

    def check_tracking(self):
        """A program that knows centrals only from the events: every address an event names
        was announced (connected, or address-changed) before."""
        events = self.events()
        wrong = unannounced(events)
        if wrong:
            raise CheckFailed('expected %s, got %s' % wrong)
        step('a program following the events met only addresses it was told (%d events)' % len(events))


def gattctl(args, *words, expect=0):
    done = subprocess.run([args.gattctl] + list(words), capture_output=True, text=True, timeout=bound(30))
    if expect is not None and done.returncode != expect:
        raise CheckFailed('gattctl %s exited %d, expected %d: %s' % (' '.join(words), done.returncode, expect,
                                                                     (done.stdout + done.stderr).strip()))
    return done


def private_address(address):
    """A resolvable private address: the two top bits 01."""
    return (int(address.split(':')[0], 16) >> 6) == 1


def privacy_on(central, irk=IRK):
    """The kernel takes privacy only while powered off; powering on makes a new RPA."""
    btmgmt(central, 'power', 'off')
    btmgmt(central, 'privacy', 'on', irk)
    btmgmt(central, 'power', 'on')
    central.pump_until(lambda: bool(central.prop(central.adapter_path, 'org.bluez.Adapter1', 'Powered')), 20,
                       'hci1 powered again')


def connected_from_rpa(central, watch, args, after):
    event = watch.wait(central, 'the connected event', after, event='connected')
    if event.get('address-type') != 'random' or not private_address(event['address']):
        raise CheckFailed('the central should connect from a resolvable private address: %s' % event)
    if event['address'] == args.identity:
        raise CheckFailed('the central connected from its identity address: %s' % event)
    step('connected from RPA %s (%s)' % (event['address'], event['device']))
    return event


def phase_first(central, args):
    watch = Watch(args.watch)
    privacy_on(central)
    agent = CentralAgent(central.bus)
    register_agent(central, agent, 'NoInputNoOutput')
    before = len(watch.events())
    # bondedOnly drops a central that is not bonded while pairing is closed: a phone's first
    # contact comes while a person has opened it. Opened once the central has found gattd, as
    # a person opens it with the phone in hand: finding takes what the scans take (on 6.12
    # one run needed 8 restarts and a 12 s session, and a 20 s window opened before the
    # search closed before the connection), which is not what the window is about.
    path = find(central, args, SERVICE)
    gattctl(args, 'pairing', 'open', str(args.window))
    central.connect(path)
    first = connected_from_rpa(central, watch, args, before)
    rpa = first['address']
    found = chrcs(central, path, SERVICE)
    reply = found[REPLY]['path']
    central.subscribe(reply)
    watch.wait(central, 'central-subscribed reply', before, event='central-subscribed', id='reply')
    step('subscribed to reply through a socket')
    pair(central, path)
    changed = watch.wait(central, 'the address-changed event', before, event='address-changed')
    wanted = {'address': args.identity, 'address-type': 'public', 'old-address': rpa, 'old-address-type': 'random',
              'device': first['device']}
    if any(changed.get(k) != v for k, v in wanted.items()):
        raise CheckFailed('address-changed: %s, expected %s' % (changed, wanted))
    step('bonded: address-changed %s -> %s, same object %s' % (rpa, args.identity, changed['device']))
    centrals = json.loads(gattctl(args, 'centrals', '--json').stdout)
    if [(c['address'], c['addressType']) for c in centrals] != [(args.identity, 'public')]:
        raise CheckFailed('gattctl centrals: %s' % centrals)
    bonds = json.loads(gattctl(args, 'bonds', '--json').stdout)
    if [(b['address'], b['bonded'], b['connected']) for b in bonds] != [(args.identity, True, True)]:
        raise CheckFailed('gattctl bonds: %s' % bonds)
    step('gattctl centrals and bonds name the identity')

    # bluetoothd keeps a subscription (CCC) by the link's address and does not move it from
    # the RPA to the identity: on 5.82 a value sent over the pre-bond subscription did not reach
    # the central (docs/bluez-contract.md §12). The value for this central alone is checked
    # after its return, on a link bluetoothd knows by the identity.
    done = gattctl(args, 'set', 'reply', '--uint16', '1', '--to', rpa, expect=5)
    if 'is not connected' not in done.stderr:
        raise CheckFailed('the old RPA should name no connected central: %s' % done.stderr.strip())

    prebond_values(central, args, watch, reply, before)
    central.write(found[CMD]['path'], b'hello')
    written = watch.wait(central, 'the written event', before, event='written', id='cmd')
    if (written.get('address'), written.get('device')) != (args.identity, first['device']):
        raise CheckFailed('the write is reported as %s' % written)
    step('write reported with the identity: %s' % written['address'])

    gattctl(args, 'disconnect', args.identity)
    gone = watch.wait(central, 'the disconnected event', before, event='disconnected')
    if gone['address'] != args.identity:
        raise CheckFailed('disconnected names %s, expected %s' % (gone['address'], args.identity))
    central.pump_until(lambda: not central.prop(path, 'org.bluez.Device1', 'Connected'), 20, 'the link to drop')
    step('gattctl disconnect %s dropped it; the event names the identity' % args.identity)
    close_window(central, args, watch)
    watch.check_tracking()


def prebond_values(central, args, watch, reply, before):
    """Values over the subscription the central made from its RPA, now that it has bonded on
    the same link (docs/bluez-contract.md §12). 5.66 (one shared socket): bluetoothd finds the
    subscription by the address the link began with and sends the value for all. 5.79 and
    later (a socket per central): bluetoothd looks for the subscription under the identity,
    finds none and stops reading that socket; the value gattd sent it (`--to IDENTITY`, which
    gattd accepts) and the value for all after it never arrive, and gattd, seeing its socket
    keep them unread, closes it: `reply` unsubscribed, and a value for the central alone is
    refused as "not subscribed" instead of lost in silence."""
    base = reply_value(args)
    mark = len(watch.events())
    if not args.targeted:
        gattctl(args, 'set', 'reply', '--uint16', str(base + 2))
        got = central.wait_notifications(reply, 1, what='the value for all over the pre-bond subscription')
        if got[-1] != uint16(base + 2):
            raise CheckFailed('the value for all %s arrived as %s' % (uint16(base + 2).hex(), got[-1].hex()))
        step('the value for all reached the central over the subscription it made from its RPA (%s)' % got[-1].hex())
        return
    gattctl(args, 'set', 'reply', '--uint16', str(base + 1), '--to', args.identity)
    gattctl(args, 'set', 'reply', '--uint16', str(base + 2))
    watch.wait(central, 'gattd to close the socket bluetoothd stopped reading', mark, event='unsubscribed', id='reply')
    if central.notifications[reply]:
        raise CheckFailed('a value over the pre-bond subscription arrived: %s' % central.notifications[reply])
    log = open(args.gattd_log).read()
    if 'bluetoothd stopped reading a central\'s notify socket' not in log:
        raise CheckFailed('gattd did not say why the socket was closed')
    done = gattctl(args, 'set', 'reply', '--uint16', str(base + 3), '--to', args.identity, expect=5)
    if not re.search(r'not subscribed|no central is subscribed', done.stderr):
        raise CheckFailed('a value for the central should be refused as not subscribed: %s' % done.stderr.strip())
    step('neither value reached the central; gattd closed the socket bluetoothd stopped reading: %s'
         % done.stderr.strip())


def close_window(central, args, watch):
    """The window had only to outlast the first contact (--window, generous for a loaded
    machine); the rest of it need not be waited out: opened again for 1 s, gattd's timer
    closes it a second later. The close that counts is the one after that opening (the
    first window may have ended on its own meanwhile)."""
    mark = len(watch.events())
    gattctl(args, 'pairing', 'open', '1')
    watch.wait(central, 'pairing opened again for 1 s', mark, event='pairing', state='open', seconds='1')
    reopened = [i for i, e in enumerate(watch.events()) if i >= mark and
                (e.get('event'), e.get('state'), e.get('seconds')) == ('pairing', 'open', '1')][0]
    watch.wait(central, 'the pairing window to close', reopened + 1, event='pairing', state='closed')
    step('pairing closed')


def reply_subscribed(args):
    """Whether gattd has `reply` subscribed now (`gattctl list`)."""
    listed = [json.loads(line) for line in gattctl(args, 'list', '--json').stdout.splitlines() if line.strip()]
    return [c['subscribed'] for c in listed if c['id'] == 'reply'] == [True]


def reply_value(args):
    """`reply`'s current value as gattd has it (`gattctl get`), a little-endian uint16."""
    got = json.loads(gattctl(args, 'get', 'reply', '--json').stdout)
    return int.from_bytes(bytes.fromhex(got['hex']), 'little')


def uint16(value):
    return (value % 0x10000).to_bytes(2, 'little')


def targeted_value(central, args, watch, reply, before, device, fresh=False, held=False):
    """Subscribes to `reply` and sends it a value for this central alone, by its identity:
    it arrives where bluetoothd targets sockets (5.79 and later); 5.66 shares one socket and
    gattd refuses, saying so (never "not subscribed"), and a value for all reaches it.

    Each value is derived from `reply`'s current one, so it differs from what gattd holds:
    gattd notifies nobody of a control set that leaves the value unchanged (gattctl(1)
    `set`), and a repeated value would look like a notification bluetoothd lost. The value
    for all must first show up as the watch's `changed` event (gattd wrote it), and only
    then is the notification awaited (bluetoothd sent it).

    fresh: after bluetoothd restarted, or gattd re-registered its application (a reload),
    no subscription survives (§6): `reply` must not be subscribed before the central
    subscribes.

    held: 5.66 after a re-pair with a new IRK (phase repair): bluetoothd looks the identity
    up for each subscriber, finds the older object, which has no link, and keeps the value
    pending for it (§12), so only gattd's part is checked: the value for all written.

    Either way, once the central unsubscribes `reply` must end unsubscribed."""
    if fresh and reply_subscribed(args):
        raise CheckFailed('no subscription survives a restart or a reload: reply is subscribed '
                          'before the central subscribed')
    central.subscribe(reply)
    subscribed = watch.wait(central, 'central-subscribed reply', before, event='central-subscribed', id='reply')
    if subscribed.get('device') not in (device if isinstance(device, list) else [device]):
        raise CheckFailed('central-subscribed names %s, the central is %s' % (subscribed.get('device'), device))
    step('subscribed through a new socket (central-subscribed %s)' % subscribed['device'])
    base = reply_value(args)
    targeted, for_all = uint16(base + 1), uint16(base + 2)
    done = gattctl(args, 'set', 'reply', '--uint16', str(int.from_bytes(targeted, 'little')), '--to', args.identity,
                   expect=None)
    mark = len(watch.events())
    if args.targeted:
        if done.returncode != 0:
            raise CheckFailed('gattctl set reply --to %s: exit %d: %s' % (args.identity, done.returncode,
                                                                          done.stderr.strip()))
        got = central.wait_notifications(reply, 1, what='the targeted value')
        if got[-1] != targeted:
            raise CheckFailed('the targeted value %s arrived as %s' % (targeted.hex(), got[-1].hex()))
        step('gattctl set reply --to %s reached the central (%s)' % (args.identity, got[-1].hex()))
    else:
        if done.returncode != 5 or 'not subscribed' in done.stderr or 'cannot reach chosen centrals' not in done.stderr:
            raise CheckFailed('5.66 shares one socket: --to must be refused as untargetable, got exit %d: %s'
                              % (done.returncode, done.stderr.strip()))
        step('gattctl set --to refused as bluetoothd 5.66 cannot target: %s' % done.stderr.strip())
        gattctl(args, 'set', 'reply', '--uint16', str(int.from_bytes(for_all, 'little')))
        try:
            watch.wait(central, 'the changed event of reply', mark, event='changed', id='reply', hex=for_all.hex(),
                       origin='control')
        except CheckFailed as e:
            raise CheckFailed('gattd did not notify %s (no changed event): %s' % (for_all.hex(), e))
        if held:
            step('gattctl set reply (to all) written to the shared socket (%s); bluetoothd before 5.80 holds it '
                 'for the older object, which has no link' % for_all.hex())
        else:
            got = central.wait_notifications(reply, 1, what='the value for all')
            if got[-1] != for_all:
                raise CheckFailed('the value for all %s arrived as %s' % (for_all.hex(), got[-1].hex()))
            step('gattctl set reply (to all) reached the central through the %s socket (%s)'
                 % ('new shared', got[-1].hex()))
    central.unsubscribe(reply)
    watch.wait(central, 'reply unsubscribed', mark, event='unsubscribed', id='reply')
    if reply_subscribed(args):
        raise CheckFailed('reply is still subscribed after the central unsubscribed')
    step('the central unsubscribed: reply is unsubscribed')


def returning(central, args, device_path_check, fresh=False, irk=IRK, moved=False):
    watch = Watch(args.watch)
    agent = CentralAgent(central.bus, forbid=True)
    register_agent(central, agent, 'NoInputNoOutput')
    privacy_on(central, irk)
    before = len(watch.events())
    path = central.device_path(args.peer)
    if not central.prop(path, 'org.bluez.Device1', 'Paired'):
        raise CheckFailed('this central lost its bond with %s' % args.peer)
    cached = central.gatt_tree(path).get(SERVICE, {}).get('chrcs', {})
    if moved and PLAIN not in cached:
        raise CheckFailed('the central should have cached the table with plain: %s' % sorted(cached))
    t0 = time.monotonic()
    log = BluetoothdLog(os.path.join(os.path.dirname(args.gattd_log), 'bluetoothd.log'))
    auto_connect(central, path, args.peer)
    linked = time.monotonic() - t0
    try:
        wait_resolved(central, path, args.peer, log, 30)
    except CheckFailed as e:
        # What the central and gattd saw by then: a link gone, or one up and still discovering.
        seen = [ev.get('event') for ev in watch.events()[before:]]
        raise CheckFailed('%s (the central: Connected=%s; gattd events since: %s)'
                          % (e, central.prop(path, 'org.bluez.Device1', 'Connected'), seen))
    resolved = time.monotonic() - t0
    back = watch.wait(central, 'the connected event of the return', before, event='connected')
    if (back['address'], back.get('address-type')) != (args.identity, 'public'):
        raise CheckFailed('the returning central is announced as %s' % back)
    device_path_check(back['device'])
    step('returned (bluetoothd\'s object %s), announced as %s; linked after %.1f s, services resolved after %.1f s'
         % (back['device'], back['address'], linked, resolved))
    found = chrcs(central, path, SERVICE)
    if moved:
        # gattd was reloaded without `plain` while the central was away: the attributes after
        # it moved (docs/bluez-contract.md §10). The central must see the new table, and each
        # characteristic it reads must give its own value.
        if PLAIN in found:
            raise CheckFailed('the central still lists plain after its return: %s' % sorted(found))
        value = central.read(found[REPLY]['path'])
        if value != uint16(reply_value(args)):
            raise CheckFailed('read reply = %s, gattd holds %s' % (value.hex(), uint16(reply_value(args)).hex()))
        step('the central sees the table of the reload while it was away (plain gone; %s)'
             % ', '.join('%s at %s' % (name, found[uuid]['path'].rsplit('/', 1)[1])
                         for name, uuid in (('secret', SECRET), ('reply', REPLY), ('cmd', CMD))))
        if not re.search(r'returned after the GATT table changed while it was away.*%s' % re.escape(args.identity),
                         open(args.gattd_log).read()):
            raise CheckFailed('gattd did not log the return of a central that missed Service Changed')
        step('gattd logged its return after the change it missed')
    targeted_value(central, args, watch, found[REPLY]['path'], before, back['device'], fresh)
    secret = found[SECRET]['path']
    value = central.read(secret)
    if value != b'for bonded phones':
        raise CheckFailed('read secret = %r' % value)
    if agent.calls:
        raise CheckFailed('the bonded central was asked to pair again: %s' % agent.calls)
    step('read secret over the encrypted link without pairing again')
    if not central.prop(path, 'org.bluez.Device1', 'Connected'):
        raise CheckFailed('gattd dropped the bonded central (bondedOnly)')
    log = open(args.gattd_log).read()
    if re.search(r'disconnecting a central that is not bonded.*%s' % re.escape(args.identity), log):
        raise CheckFailed('gattd took the bonded central for a stranger')
    auto_connect_end(central, args.peer)
    gattctl(args, 'disconnect', args.identity)
    central.pump_until(lambda: not central.prop(path, 'org.bluez.Device1', 'Connected'), 20, 'the link to drop')
    watch.wait(central, 'the disconnected event', before, event='disconnected', address=args.identity)
    watch.check_tracking()


def phase_return(central, args):
    def same_object(device):
        if device.endswith('dev_' + args.identity.replace(':', '_')):
            raise CheckFailed('before a restart bluetoothd keeps the object of the first RPA, got %s' % device)
    # gattd was reloaded while the central was away, which ended every subscription: `reply`
    # is not subscribed until the central subscribes again.
    returning(central, args, same_object, fresh=True, moved=True)


def phase_restarted(central, args):
    """After the re-pair (phase repair): bluetoothd loads one object for the identity, with
    the newer keys (storage is by address), and the central, back from an RPA of its new IRK,
    reads `secret` without pairing: the newer bond survived."""
    def identity_object(device):
        if not device.endswith('dev_' + args.identity.replace(':', '_')):
            raise CheckFailed('after a restart the object should be dev_<identity>, got %s' % device)
        objects = identity_objects(central, args)
        if list(objects) != [device]:
            raise CheckFailed('after a restart bluetoothd should keep one object for %s: %s' % (args.identity, objects))
    returning(central, args, identity_object, fresh=True, irk=NEW_IRK)


def identity_objects(central, args):
    """bluetoothd's objects on gattd's adapter whose Address is the central's identity:
    {path: (AddressType, Paired, Bonded, Connected)} (Bonded: None before 5.67)."""
    objects = central.objects()
    adapters = [str(path) for path, ifaces in objects.items()
                if str(ifaces.get('org.bluez.Adapter1', {}).get('Address', '')).upper() == args.peer.upper()]
    if len(adapters) != 1:
        raise CheckFailed('gattd\'s adapter %s: %s' % (args.peer, adapters))
    found = {}
    for path, ifaces in objects.items():
        device = ifaces.get('org.bluez.Device1')
        if (device is None or not str(path).startswith(adapters[0] + '/')
                or str(device.get('Address', '')).upper() != args.identity.upper()):
            continue
        bonded = device.get('Bonded')
        found[str(path)] = (str(device.get('AddressType')), bool(device.get('Paired')),
                            None if bonded is None else bool(bonded), bool(device.get('Connected')))
    return found


def phase_repair(central, args):
    """The phone was reset: it forgot gattd, takes a new IRK (same identity) and pairs again
    while gattd's window is open. gattd's side cannot resolve the new RPAs with the IRK it
    kept, so the first contact is a new object; the pairing gives it the identity, and
    bluetoothd keeps both objects with that Address (bluez/bluez #1095)."""
    watch = Watch(args.watch)
    old = identity_objects(central, args)
    if len(old) != 1 or not list(old.values())[0][1]:
        raise CheckFailed('before the re-pair gattd\'s adapter should hold one paired object for %s: %s'
                          % (args.identity, old))
    old_device = list(old)[0]
    privacy_on(central, NEW_IRK)
    agent = CentralAgent(central.bus)
    register_agent(central, agent, 'NoInputNoOutput')
    before = len(watch.events())
    gattctl(args, 'pairing', 'open', str(args.window))
    path = find(central, args, SERVICE)   # the central forgets its bond with gattd first
    central.connect(path)
    first = connected_from_rpa(central, watch, args, before)
    if first['device'] == old_device:
        raise CheckFailed('a new IRK: the new RPA should be a new object, not %s' % old_device)
    pair(central, path)
    changed = watch.wait(central, 'the address-changed event', before, event='address-changed')
    wanted = {'address': args.identity, 'old-address': first['address'], 'device': first['device']}
    if any(changed.get(k) != v for k, v in wanted.items()):
        raise CheckFailed('address-changed: %s, expected %s' % (changed, wanted))
    step('paired again with a new IRK: address-changed %s -> %s on a new object %s'
         % (first['address'], args.identity, first['device']))
    both = identity_objects(central, args)
    step('bluetoothd\'s objects with %s: %s' % (args.identity, both))
    bonds = json.loads(gattctl(args, 'bonds', '--json').stdout)
    step('gattctl bonds: %s' % bonds)
    centrals = json.loads(gattctl(args, 'centrals', '--json').stdout)
    step('gattctl centrals: %s' % [(c['address'], c['addressType'], c.get('bonded')) for c in centrals])
    if [(b['address'], b['bonded'], b['connected']) for b in bonds] != [(args.identity, True, True)]:
        raise CheckFailed('gattctl bonds should list %s once, bonded and connected: %s' % (args.identity, bonds))
    if [(c['address'], c['addressType']) for c in centrals] != [(args.identity, 'public')]:
        raise CheckFailed('gattctl centrals: %s' % centrals)
    found = chrcs(central, path, SERVICE)
    value = central.read(found[SECRET]['path'])
    if value != b'for bonded phones':
        raise CheckFailed('read secret = %r' % value)
    step('read secret over the link encrypted with the new keys')
    # Before 5.80 bluetoothd's socket may name the older object (it looks the link's
    # identity up and finds the older first): either names this central.
    targeted_value(central, args, watch, found[REPLY]['path'], before,
                   [first['device']] + ([old_device] if args.older_first else []), held=args.older_first)
    shared = re.findall(r'central paired again \(new IRK\).*', open(args.gattd_log).read())
    if not [line for line in shared if args.identity in line and first['device'] in line]:
        raise CheckFailed('gattd did not log the two objects of %s: %s' % (args.identity, shared))
    step('gattd: %s' % shared[-1])
    if args.older_first:
        # bluetoothd before 5.80 files the link's end under the older object, so the newer
        # stays Connected until bluetoothd restarts (phase restarted), and a Disconnect or
        # RemoveDevice on it would wait for an end that never comes: the central leaves.
        central.disconnect(path)
        central.pump_until(lambda: not central.prop(path, 'org.bluez.Device1', 'Connected'), 20, 'the link to drop')
        step('the central left; bluetoothd\'s objects with %s: %s' % (args.identity, identity_objects(central, args)))
    else:
        gattctl(args, 'disconnect', args.identity)
        central.pump_until(lambda: not central.prop(path, 'org.bluez.Device1', 'Connected'), 20, 'the link to drop')
        watch.wait(central, 'the disconnected event', before, event='disconnected', address=args.identity)
        left = json.loads(gattctl(args, 'centrals', '--json').stdout)
        if left:
            raise CheckFailed('gattctl centrals after the disconnect: %s' % left)
        step('gattctl disconnect %s dropped it; bluetoothd\'s objects: %s'
             % (args.identity, identity_objects(central, args)))
    close_window(central, args, watch)
    watch.check_tracking()


def phase_stranger(central, args):
    watch = Watch(args.watch)
    privacy_on(central, NEW_IRK)
    before = len(watch.events())
    path = find(central, args, SERVICE)
    t0 = time.monotonic()
    try:
        central.call(path, 'org.bluez.Device1', 'Connect', timeout=30)
    except dbus.DBusException as e:
        step('connect ended with %s: %s' % (e.get_dbus_name(), e.get_dbus_message()))
    event = connected_from_rpa(central, watch, args, before)
    central.pump_until(lambda: not central.prop(path, 'org.bluez.Device1', 'Connected'), 30, 'the link to drop')
    watch.wait(central, 'the disconnected event', before, event='disconnected', address=event['address'])
    step('gattd dropped the unbonded private central %s within %.1f s' % (event['address'], time.monotonic() - t0))
    watch.check_tracking()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('phase', choices=['first', 'return', 'restarted', 'repair', 'stranger'])
    parser.add_argument('--adapter', default='hci1')
    parser.add_argument('--peer', default='00:AA:01:00:00:00')
    parser.add_argument('--identity', default='00:AA:01:01:00:01', help="this central's identity (hci1's address)")
    parser.add_argument('--gattctl', required=True)
    parser.add_argument('--watch', required=True, help='the file gattctl watch --json writes')
    parser.add_argument('--gattd-log', required=True)
    parser.add_argument('--window', type=int, default=20, help='first: seconds of pairing opened before the first contact')
    parser.add_argument('--targeted', action='store_true', help='bluetoothd sends a socket\'s values to its '
                        'central alone (5.79 and later)')
    parser.add_argument('--older-first', action='store_true', help='bluetoothd finds the older of two objects '
                        'with one address first (before 5.80; 5.80 puts new objects first, bluez/bluez #1095)')
    parser.add_argument('--shared', action='store_true', help='bluetoothd acquires one notify socket per '
                        'characteristic for all centrals (5.66 to 5.68)')
    args = parser.parse_args()
    if args.shared and args.targeted:
        parser.error('--shared and --targeted exclude each other')
    central = Central(args.adapter, timeout=30)
    phases = {'first': phase_first, 'return': phase_return, 'restarted': phase_restarted, 'repair': phase_repair, 'stranger': phase_stranger}
    run(lambda: (central.power_on(), phases[args.phase](central, args)))


if __name__ == '__main__':
    main()
