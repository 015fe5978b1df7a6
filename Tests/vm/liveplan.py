# SPDX-License-Identifier: MIT
"""Checks of gattd at run time, by a real central: write hooks that decide, notifications
from value-source timers and from `gattctl set`, indications, and the value a central
wrote surviving restarts.

Which characteristics are used comes from the configuration (the first one with a
deciding `onWrite`, with a counter `update`, with `indicate`, and the first readable,
writable, persistent one); what a hook rejects is given on the command line
(`--reject ID=HEXPREFIX:CODE`), as a hook is a program the plan cannot read.
"""
import json
import re
import subprocess
import time

from bluezcentral import CheckFailed, bound, step
from gattdplan import characteristics, show

# The value the central writes last; after gattd or bluetoothd restarts it must read back.
PERSISTED = b'central-wrote-this'


def att_app_error(code):
    """The D-Bus error a BlueZ 5.66 central reports for ATT application error `code`."""
    return ('org.bluez.Error.Failed', 'Operation failed with ATT error: 0x%02x' % code)


def first(config, predicate):
    """The first (service, characteristic) of the config that satisfies predicate(c)."""
    return next(((s, c) for s, c in characteristics(config) if predicate(c)), (None, None))


def persisted_characteristic(config):
    """Where the central leaves PERSISTED: readable, writable, persisting, long enough."""
    return first(config, lambda c: {'read', 'write'} <= set(c['flags']) and
                 c.get('persist', True) and 'onWrite' not in c and
                 c.get('minLength', 0) <= len(PERSISTED) <= c.get('maxLength', 512))


class Gattctl:
    """gattctl in the guest (root, the guest's system bus)."""

    def __init__(self, binary):
        self.binary = binary

    def run(self, *argv):
        try:
            r = subprocess.run([self.binary, *argv], capture_output=True, text=True, timeout=bound(30))
        except subprocess.TimeoutExpired:
            raise CheckFailed('gattctl %s did not finish within %d s' % (' '.join(argv), bound(30)))
        if r.returncode != 0:
            raise CheckFailed('gattctl %s exited %d: %s' % (' '.join(argv), r.returncode,
                                                             (r.stderr or r.stdout).strip()))
        return r.stdout

    def entry(self, cid):
        for line in self.run('list', '--json').splitlines():
            e = json.loads(line)
            if e.get('id') == cid:
                return e
        raise CheckFailed('gattctl list has no characteristic %s' % cid)


def check_hook(central, args, config, served):
    svc, c = first(config, lambda c: c.get('onWrite', {}).get('decides'))
    if c is None:
        return
    rule = dict(r.split('=', 1) for r in args.reject).get(c['id'])
    if rule is None:
        raise CheckFailed('%s has a deciding onWrite hook; give --reject %s=HEXPREFIX:CODE'
                          % (c['id'], c['id']))
    prefix, code = rule.split(':')
    code = int(code, 0)
    path = served(svc, c)['path']
    before = central.read(path)
    bad = bytes.fromhex(prefix) + b'-no'
    central.expect_dbus_error(lambda: central.write(path, bad), *att_app_error(code),
                              what='write %s to %s (hook rejects)' % (bad.hex(), c['id']))
    after = central.read(path)
    if after != before:
        raise CheckFailed('%s changed to %s by a write its hook rejected' % (c['id'], show(after)))
    step('write %s to %s -> hook exit %d -> ATT 0x%02x (%s), value kept %s'
         % (bad.hex(), c['id'], code, code, att_app_error(code)[1], show(after)))
    good = b'hook-ok'
    central.write(path, good)
    back = central.read(path)
    if back != good:
        raise CheckFailed('hook accepted %s for %s, read back %s' % (show(good), c['id'], show(back)))
    step('write %s to %s -> hook accepted, read back the same' % (show(good), c['id']))


def check_timer(central, gattctl, config, served):
    svc, c = first(config, lambda c: 'counter' in c.get('update', {}).get('source', {}) and
                   'notify' in c['flags'])
    if c is None:
        return
    path = served(svc, c)['path']
    every = c['update']['everyMs']
    central.subscribe(path)
    values = central.wait_notifications(path, 4, timeout=max(10.0, every * 20 / 1000),
                                        what='notifications of %s (every %d ms)' % (c['id'], every))
    nums = [v[0] for v in values[:4]]   # the default encoding: one uint8
    step_ = c['update']['source']['counter'].get('step', 1)
    hi = c['update']['source']['counter'].get('max', 255)
    lo = c['update']['source']['counter'].get('min', 0)
    for a, b in zip(nums, nums[1:]):
        # missed ticks are skipped, never replayed: each value is a later counter value
        delta = (b - a) % (hi - lo + 1)
        if delta == 0 or delta % abs(step_) != 0:
            raise CheckFailed('%s notified %s: not a counter stepping by %d' % (c['id'], nums, step_))
    step('subscribed to %s: timer notifications %s' % (c['id'], ' '.join(map(str, nums))))
    central.unsubscribe(path)
    central.pump_until(lambda: not gattctl.entry(c['id'])['subscribed'], 15,
                       'gattd to see the unsubscription of %s' % c['id'])
    first_value = gattctl.entry(c['id'])['hex']
    # the timer must stay quiet: watch for ten periods that the value does not move
    deadline = time.monotonic() + max(2.0, every * 10 / 1000)
    samples = 0
    while time.monotonic() < deadline or samples < 3:
        samples += 1
        now = gattctl.entry(c['id'])['hex']
        if now != first_value:
            raise CheckFailed('%s still updates after unsubscribing (%s -> %s)'
                              % (c['id'], first_value, now))
    step('unsubscribed from %s: gattd no longer subscribed, value stays %s for %d ms (%d looks)'
         % (c['id'], first_value, max(2000, every * 10), samples))


def check_gattctl_notify(central, gattctl, config, served):
    svc, c = first(config, lambda c: 'notify' in c['flags'] and 'update' not in c and
                   c.get('maxLength', 512) >= 12)
    if c is None:
        return
    path = served(svc, c)['path']
    central.subscribe(path)
    text = 'gattctl-%04d' % (int(time.monotonic() * 10) % 10000)
    gattctl.run('set', c['id'], '--utf8', text)
    values = central.wait_notifications(path, 1, what='notification of %s after gattctl set' % c['id'])
    if text.encode() not in values:
        raise CheckFailed('after gattctl set %s --utf8 %s the central got %s'
                          % (c['id'], text, [show(v) for v in values]))
    step('gattctl set %s --utf8 %s -> notification "%s"' % (c['id'], text, text))
    central.unsubscribe(path)


def check_indication(central, gattctl, config, served, gattd_log):
    svc, c = first(config, lambda c: 'indicate' in c['flags'])
    if c is None:
        return
    path = served(svc, c)['path']
    central.subscribe(path)
    confirmed = r'indication confirmed.*gatt\.id=%s\b' % re.escape(c['id'])
    before = count_lines(gattd_log, confirmed)
    gattctl.run('set', c['id'], '--hex', 'a5')
    values = central.wait_notifications(path, 1, what='indication of %s' % c['id'])
    if b'\xa5' not in values:
        raise CheckFailed('indication of %s carried %s, expected a5' % (c['id'], [v.hex() for v in values]))
    step('gattctl set %s --hex a5 -> indication received' % c['id'])
    central.pump_until(lambda: count_lines(gattd_log, confirmed) > before, 15,
                       '"indication confirmed gatt.id=%s" in %s' % (c['id'], gattd_log))
    step('gattd log: indication of %s confirmed (bluetoothd Confirm)' % c['id'])
    central.unsubscribe(path)


def count_lines(path, regex):
    with open(path, errors='replace') as f:
        return sum(1 for line in f if re.search(regex, line))


def leave_persisted(central, config, served):
    svc, c = persisted_characteristic(config)
    if c is None:
        raise CheckFailed('no readable, writable, persistent characteristic to check persistence with')
    central.write(served(svc, c)['path'], PERSISTED)
    step('wrote %s to %s (to be read after restarts)' % (show(PERSISTED), c['id']))


def live_checks(central, args, config, served):
    """Hook, timer, gattctl and indication checks on a connected central; leaves PERSISTED."""
    gattctl = Gattctl(args.gattctl)
    check_hook(central, args, config, served)
    check_timer(central, gattctl, config, served)
    check_gattctl_notify(central, gattctl, config, served)
    check_indication(central, gattctl, config, served, args.gattd_log)
    leave_persisted(central, config, served)


def check_persisted(central, config, served, when='before the restart'):
    """After a restart: the central reads back what it wrote before."""
    svc, c = persisted_characteristic(config)
    got = central.read(served(svc, c)['path'])
    if got != PERSISTED:
        raise CheckFailed('read %s = %s, expected %s (written %s)'
                          % (c['id'], show(got), show(PERSISTED), when))
    step('read %s = %s (written %s)' % (c['id'], show(got), when))

