# SPDX-License-Identifier: MIT
"""A BLE central on BlueZ's D-Bus API (python3-dbus + GLib), for checks over the air.

Every operation is bounded by a timeout and pumps the GLib main loop while it waits, so
signals (discovery, PropertiesChanged for notifications) are seen as they happen. A failed
check raises CheckFailed with a message meant for a person; `step` prints one line per
successful step.

Bounds are SLOW times as long as given (GATTD_VM_SLOW, set by `run-suite --slow`: 1 natively,
more when gattd and gattctl run emulated; scenarios/lib.sh reads the same): every wait of a
Central (pump_until, method calls), and `bound(seconds)` for the plans' other waits (a
gattctl that must finish). Durations a check needs to see pass (a value that stays, a scan
slice) are not bounds and stay as given.
"""
import argparse
import os
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

BLUEZ = 'org.bluez'
OM = 'org.freedesktop.DBus.ObjectManager'
PROPS = 'org.freedesktop.DBus.Properties'
ADAPTER = 'org.bluez.Adapter1'
DEVICE = 'org.bluez.Device1'
SERVICE = 'org.bluez.GattService1'
CHRC = 'org.bluez.GattCharacteristic1'
DESC = 'org.bluez.GattDescriptor1'
BASE_UUID_TAIL = '-0000-1000-8000-00805f9b34fb'


class CheckFailed(Exception):
    """A check did not hold; the message says what was expected and what was seen."""


SLOW = int(os.environ.get('GATTD_VM_SLOW') or 1)


def bound(seconds):
    """A bound on waiting for gattd or gattctl: `seconds` natively, SLOW times as long."""
    return seconds * SLOW


def full_uuid(uuid):
    """Returns the 128-bit lower-case form of a 16/32/128-bit UUID string."""
    u = uuid.lower()
    if len(u) == 4:
        return '0000' + u + BASE_UUID_TAIL
    if len(u) == 8:
        return u + BASE_UUID_TAIL
    return u


def short(uuid):
    """Returns the 16-bit form of a SIG UUID, else the UUID as given (for messages)."""
    u = uuid.lower()
    if u.endswith(BASE_UUID_TAIL) and u.startswith('0000'):
        return u[4:8]
    return u


def step(message):
    """Prints one line for a successful step, flushed at once (the log is watched live)."""
    print(message, flush=True)


def peer_arguments(description):
    """The command line the plans share: the central's adapter and gattd's address
    (the defaults are the guest's: hci1 is the central, hci0 gattd's controller)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--adapter', default='hci1')
    parser.add_argument('--peer', default='00:AA:01:00:00:00')
    return parser


def at_address(address):
    """A discover() match: the device with this Bluetooth address."""
    return lambda dev: str(dev.get('Address', '')).upper() == address.upper()


class Central:
    """The central side, on one named adapter of the running bluetoothd."""

    @classmethod
    def fresh(cls, adapter, peer, timeout=30.0):
        """A central on `adapter`, powered, that has forgotten `peer`: no bond and no
        GATT cache from an earlier run, so what it finds is what gattd serves now."""
        central = cls(adapter, timeout=timeout)
        central.power_on()
        central.forget(peer)
        return central

    @classmethod
    def connected(cls, adapter, peer, timeout=30.0, what='gattd'):
        """`fresh`, then gattd's advertisement found at `peer` and connected; returns the
        central and the device's object path."""
        central = cls.fresh(adapter, peer, timeout)
        path, _ = central.discover(at_address(peer), what=what)
        central.connect(path)
        return central, path

    def __init__(self, adapter='hci1', timeout=30.0):
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        self.bus = dbus.SystemBus()
        self.timeout = timeout   # as given: pump_until and send make it SLOW times as long
        self.adapter_path = '/org/bluez/' + adapter
        self.adapter_name = adapter
        self.notifications = {}   # characteristic path -> list of bytes
        self._acquired = {}       # characteristic path -> (socket fd, GLib watch): acquire_notify
        self.bus.add_signal_receiver(self._properties_changed, 'PropertiesChanged', PROPS,
                                     BLUEZ, path_keyword='path')

    # --- plumbing -------------------------------------------------------------------------
    def pump_until(self, predicate, timeout, what, scaled=True):
        """Runs the main loop until predicate() is true; CheckFailed after timeout seconds
        (times SLOW unless scaled is False)."""
        if scaled:
            timeout = bound(timeout)
        ctx = GLib.MainContext.default()
        deadline = time.monotonic() + timeout
        fired = []
        source = GLib.timeout_add(100, lambda: fired.append(1) or True)
        try:
            while True:
                while ctx.pending():
                    ctx.iteration(False)
                if predicate():
                    return
                if time.monotonic() >= deadline:
                    raise CheckFailed('timed out after %.0f s waiting for %s' % (timeout, what))
                ctx.iteration(True)   # wakes at least every 100 ms (the timeout source)
        finally:
            GLib.source_remove(source)

    def call(self, path, interface, method, *args, timeout=None, what=None, signature=None, scaled=True):
        """Calls a BlueZ method asynchronously; returns its reply, raises dbus exceptions."""
        return self.together([self.send(path, interface, method, *args, timeout=timeout, what=what,
                                        signature=signature, scaled=scaled)])[0]

    def send(self, path, interface, method, *args, timeout=None, what=None, signature=None, scaled=True):
        """Sends a BlueZ method call without waiting; `together` waits for its reply. The
        timeout is SLOW times as long unless scaled is False (a call whose expected outcome
        is no answer at all)."""
        timeout = timeout or self.timeout
        if scaled:
            timeout = bound(timeout)
        result = {'timeout': timeout, 'what': what or '%s.%s' % (interface, method)}
        obj = self.bus.get_object(BLUEZ, path, introspect=False)
        getattr(dbus.Interface(obj, interface), method)(
            *args, timeout=timeout, **({'signature': signature} if signature else {}),
            reply_handler=lambda *r: result.setdefault('ok', r),
            error_handler=lambda e: result.setdefault('err', e))
        return result

    def together(self, sent):
        """Waits for the replies of calls `send` sent (all under way at once: two centrals'
        requests meet at the peripheral); returns them in order, raises the first error."""
        self.pump_until(lambda: all('ok' in r or 'err' in r for r in sent),
                        max(r['timeout'] for r in sent) + 2, ', '.join(r['what'] for r in sent), scaled=False)
        replies = []
        for r in sent:
            if 'err' in r:
                raise r['err']
            replies.append(r['ok'][0] if len(r['ok']) == 1 else (None if not r['ok'] else r['ok']))
        return replies

    def objects(self):
        return self.call('/', OM, 'GetManagedObjects')

    def prop(self, path, interface, name):
        return self.call(path, PROPS, 'Get', interface, name)

    def set_prop(self, path, interface, name, value):
        self.call(path, PROPS, 'Set', interface, name, value, signature='ssv')

    def _properties_changed(self, interface, changed, invalidated, path=None):
        if interface == CHRC and 'Value' in changed and path in self.notifications:
            self.notifications[path].append(bytes(changed['Value']))

    # --- adapter and device ---------------------------------------------------------------
    def power_on(self):
        self.set_prop(self.adapter_path, ADAPTER, 'Powered', dbus.Boolean(True))
        self.pump_until(lambda: bool(self.prop(self.adapter_path, ADAPTER, 'Powered')),
                        self.timeout, '%s powered' % self.adapter_name)
        step('%s powered (%s)' % (self.adapter_name,
                                  self.prop(self.adapter_path, ADAPTER, 'Address')))

    def device_path(self, address):
        return '%s/dev_%s' % (self.adapter_path, address.upper().replace(':', '_'))

    def forget(self, address):
        """Removes a stale device object for address on our adapter, if there is one."""
        path = self.device_path(address)
        if path in self.objects():
            self.call(self.adapter_path, ADAPTER, 'RemoveDevice', dbus.ObjectPath(path))

    # discover(): a scan that has not found the device this long after bluetoothd said it
    # was discovering (StartDiscovery's reply) is started again; after RESCANS such restarts
    # one session is given a whole scan period and more (SESSION_SECONDS), then the cycle
    # begins again.
    RESCAN_SECONDS = 1.0
    RESCANS = 8
    SESSION_SECONDS = 12.0

    def discover(self, match, timeout=60.0, what='device'):
        """Scans (LE) until a device on our adapter satisfies match(props); returns its
        object path and properties.

        The emulated controller reports an advertiser once per scan start, at once, and
        that report is lost when it wins a race with the start of the discovery: on 6.1 the
        kernel drops it while its discovery is still starting (no MGMT Device Found), on
        6.12 bluetoothd drops the Device Found that comes before the reply to its Start
        Service Discovery. Seen in the guest's btmon: on a loaded machine 6.1 lost 17 of 26
        such races in one run of gattd-security, each costing a whole scan period (10.24 s,
        after which the kernel ends the scan and bluetoothd starts the next in the same
        session). StartDiscovery answers only once the start has completed, and a device
        whose report came through appears 0.05-0.2 s later; when it has not appeared
        RESCAN_SECONDS later, the report was lost: the session is stopped and started
        again, a new scan and a new report. After RESCANS restarts one session runs for
        SESSION_SECONDS, so that its next scan (10.24 s on) comes within it: within a
        session bluetoothd stays discovering, and on 6.12 those later scans' reports count
        even when every first one is lost (5.82 at load 14-20: docs/bluez-versions.md).
        The restarts only shorten the search: a device is found or not within `timeout`
        as before, however slow the machine."""
        self.call(self.adapter_path, ADAPTER, 'SetDiscoveryFilter',
                  dbus.Dictionary({'Transport': 'le', 'DuplicateData': dbus.Boolean(True)},
                                  signature='sv'))
        found = {}

        def scan_found():
            for path, ifaces in self.objects().items():
                dev = ifaces.get(DEVICE)
                if dev and str(dev.get('Adapter')) == self.adapter_path and match(dev):
                    found['path'], found['props'] = str(path), dev
                    return True
            return False

        deadline = time.monotonic() + bound(timeout)
        restarts = 0
        self.call(self.adapter_path, ADAPTER, 'StartDiscovery')
        try:
            while True:
                left = deadline - time.monotonic()
                wait = self.RESCAN_SECONDS if (restarts + 1) % (self.RESCANS + 1) else self.SESSION_SECONDS
                last = left <= wait
                try:
                    self.pump_until(scan_found, max(left, 0) if last else wait, what, scaled=False)
                    break
                except CheckFailed:
                    if last:
                        raise CheckFailed('timed out after %.0f s: %s not found by scanning (%d scans '
                                          'started again)' % (bound(timeout), what, restarts))
                self.call(self.adapter_path, ADAPTER, 'StopDiscovery')
                self.call(self.adapter_path, ADAPTER, 'StartDiscovery')
                restarts += 1
        finally:
            try:
                self.call(self.adapter_path, ADAPTER, 'StopDiscovery')
            except dbus.DBusException:
                pass   # already stopped
        if restarts:
            step('scan started again %d time%s before %s was found (the report of a scan that had '
                 'just started was lost)' % (restarts, '' if restarts == 1 else 's', what))
        return found['path'], found['props']

    def connect(self, path, timeout=60.0):
        """Connects and waits until services are resolved."""
        try:
            self.call(path, DEVICE, 'Connect', timeout=timeout)
        except dbus.DBusException as e:
            raise CheckFailed('connect %s failed: %s: %s'
                              % (path, e.get_dbus_name(), e.get_dbus_message()))
        self.pump_until(lambda: bool(self.prop(path, DEVICE, 'ServicesResolved')), timeout,
                        'services resolved')

    def disconnect(self, path):
        self.call(path, DEVICE, 'Disconnect')
        self.pump_until(lambda: not self.prop(path, DEVICE, 'Connected'), self.timeout,
                        'disconnected')

    # --- GATT -----------------------------------------------------------------------------
    def gatt_tree(self, device_path):
        """Returns {service uuid: {'path', 'chrcs': {uuid: {'path', 'flags', 'descs':
        {uuid: path}}}}} for the device, UUIDs in 128-bit lower-case form."""
        objs = self.objects()
        services = {}
        for path, ifaces in objs.items():
            if SERVICE in ifaces and str(ifaces[SERVICE]['Device']) == device_path:
                services[str(path)] = {'uuid': str(ifaces[SERVICE]['UUID']).lower(),
                                       'path': str(path), 'chrcs': {}}
        chrcs = {}
        for path, ifaces in objs.items():
            if CHRC in ifaces and str(ifaces[CHRC]['Service']) in services:
                c = {'uuid': str(ifaces[CHRC]['UUID']).lower(), 'path': str(path),
                     'flags': [str(f) for f in ifaces[CHRC]['Flags']], 'descs': {}}
                chrcs[str(path)] = c
                services[str(ifaces[CHRC]['Service'])]['chrcs'][c['uuid']] = c
        for path, ifaces in objs.items():
            if DESC in ifaces and str(ifaces[DESC]['Characteristic']) in chrcs:
                chrcs[str(ifaces[DESC]['Characteristic'])]['descs'][
                    str(ifaces[DESC]['UUID']).lower()] = str(path)
        return {s['uuid']: s for s in services.values()}

    def characteristics(self, device_path, service, uuids):
        """{name: object path} for `uuids` ({name: UUID}) in the device's `service`; a
        missing one fails the check, naming it and what the service has."""
        chrcs = self.gatt_tree(device_path).get(full_uuid(service), {}).get('chrcs', {})
        missing = ['%s (%s)' % (name, uuid) for name, uuid in uuids.items() if full_uuid(uuid) not in chrcs]
        if missing:
            raise CheckFailed('service %s lacks %s: has %s' % (service, ', '.join(missing), sorted(chrcs)))
        return {name: chrcs[full_uuid(uuid)]['path'] for name, uuid in uuids.items()}

    def read(self, path, interface=CHRC, timeout=None, scaled=True):
        return bytes(self.call(path, interface, 'ReadValue', dbus.Dictionary({}, signature='sv'),
                               timeout=timeout, scaled=scaled))

    def write(self, path, value, interface=CHRC, write_type=None):
        options = dbus.Dictionary({}, signature='sv')
        if write_type:
            options['type'] = write_type
        self.call(path, interface, 'WriteValue', dbus.Array(bytes(value), signature='y'),
                  options)

    def expect_dbus_error(self, action, name, message=None, what='the operation'):
        """Runs action(); it must fail with D-Bus error `name` (and `message` if given).
        Returns the error message; `what` names the action in the failure message."""
        try:
            action()
        except dbus.DBusException as e:
            got_name, got_msg = e.get_dbus_name(), e.get_dbus_message()
            if got_name != name or (message is not None and got_msg != message):
                raise CheckFailed('%s: expected %s%s, got %s "%s"'
                                  % (what, name, ' "%s"' % message if message else '',
                                     got_name, got_msg))
            return got_msg
        raise CheckFailed('%s: expected %s, but it succeeded' % (what, name))

    def subscribe(self, path):
        self.notifications[path] = []
        self.call(path, CHRC, 'StartNotify')
        self.pump_until(lambda: bool(self.prop(path, CHRC, 'Notifying')), self.timeout,
                        'Notifying = true')

    def unsubscribe(self, path):
        self.call(path, CHRC, 'StopNotify')
        self.notifications.pop(path, None)

    def acquire_notify(self, path):
        """Subscribes through the central's own AcquireNotify: bluetoothd writes the CCC and
        hands over a socket on which each read is one notification, appended to
        notifications[path] as the main loop sees it. Returns the MTU bluetoothd gave.

        Why a plan takes a fast stream this way: bluetoothd dispatches incoming D-Bus
        messages from a GLib idle source (gdbus/mainloop.c `queue_dispatch`: g_idle_add), and
        takes a socket's hang-up at idle priority too (src/shared/io-glib.c), so while some
        socket is ready on every turn of its main loop (a stream from gattd's acquired socket
        that the guest cannot keep up with: gattd logs "bluetoothd is not reading its
        socket") it answers no call: a `Properties.Get` after StartNotify waited until the
        central gave up (Tests/vm/README.md, "Debian 13's kernel"). Here nothing needs a
        D-Bus call while the stream runs, and each notification costs the guest less (no
        PropertiesChanged for bluetoothd to build, the bus daemon to route and this process
        to decode), so bluetoothd falls behind far later."""
        fd, mtu = self.call(path, CHRC, 'AcquireNotify', dbus.Dictionary({}, signature='sv'))
        fd = fd.take()
        os.set_blocking(fd, False)
        got = self.notifications[path] = []

        def readable(_fd, condition):
            while True:
                try:
                    value = os.read(fd, 1024)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not value:
                    return False   # bluetoothd closed it
                got.append(value)

        watch = GLib.io_add_watch(fd, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, readable)
        self._acquired[path] = (fd, watch)
        return int(mtu)

    def release_notify(self, path):
        """Ends an acquire_notify subscription by closing the socket."""
        fd, watch = self._acquired.pop(path)
        if GLib.MainContext.default().find_source_by_id(watch):
            GLib.source_remove(watch)
        os.close(fd)
        self.notifications.pop(path, None)

    def wait_notifications(self, path, count, timeout=None, what='notifications'):
        """Waits until `count` values arrived on path since subscribe; returns them."""
        self.pump_until(lambda: len(self.notifications[path]) >= count,
                        timeout or self.timeout, '%d %s' % (count, what))
        return list(self.notifications[path])


def run(main):
    """Runs main(); prints FAIL and exits 1 on the first failed check."""
    start = time.monotonic()
    try:
        main()
    except CheckFailed as e:
        print('FAIL: %s' % e, flush=True)
        sys.exit(1)
    except dbus.DBusException as e:
        print('FAIL: unexpected D-Bus error %s: %s' % (e.get_dbus_name(), e.get_dbus_message()),
              flush=True)
        sys.exit(1)
    step('all checks passed in %.1f s' % (time.monotonic() - start))
