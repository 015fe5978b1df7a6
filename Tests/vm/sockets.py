#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sockets.py: the socket path as a real central sees it, run by
scenarios/gattd-sockets.sh with configs/sockets.json:

  1. subscribed to `stream` (acquireNotify), the central receives a counter as
     notifications that bluetoothd read from gattd's socket: gattd logs the socket
     subscription, values only increase; unsubscribing closes the socket;
  2. the same counter on `signals` (D-Bus signals) for the same time: both rates and
     gattd's CPU per 1,000 notifications are printed, side by side;
  3. write commands to `cmd` (acquireWrite) arrive through gattd's write socket and read
     back in order; a 9-byte value (maxLength 8) is acknowledged by bluetoothd but
     dropped by gattd, which logs it, and the value stays.

usage: sockets.py --gattd-log FILE --gattd-pid PID [--adapter hci1] [--peer ADDR] [--seconds 5]
"""
import os
import re
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import Central, CheckFailed, peer_arguments, run, step  # noqa: E402

SERVICE = '12345678-1234-5678-1234-56789abcd000'
STREAM = '12345678-1234-5678-1234-56789abcd001'
SIGNALS = '12345678-1234-5678-1234-56789abcd002'
CMD = '12345678-1234-5678-1234-56789abcd003'
MEASURED = 50   # notifications a measurement takes at least (20 ms apart: 1 s natively)


def cpu_seconds(pid):
    """utime + stime of gattd, in seconds."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def processes(name):
    """Pids whose command line has `name` as the file name of an argument (bluetoothd 5.82
    runs through its own ld-linux, with bluetoothd's path after the loader's options)."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                argv = [a.decode(errors='replace') for a in f.read().split(b'\0') if a]
        except OSError:
            continue
        if any(os.path.basename(a) == name for a in argv):
            found.append(int(entry))
    return found


def cpu_of(pids):
    total = 0.0
    for pid in pids:
        try:
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def plan(args):
    central, path = Central.connected(args.adapter, args.peer, what='gattd-sock')

    def log_has(pattern):
        with open(args.gattd_log, errors='replace') as f:
            return re.search(pattern, f.read(), re.M) is not None

    def behind():
        """How often gattd found bluetoothd's notify socket full: bluetoothd behind the stream."""
        with open(args.gattd_log, errors='replace') as f:
            return f.read().count('bluetoothd is not reading its socket')

    def wait_log(pattern, what):
        try:
            central.pump_until(lambda: log_has(pattern), 30, what)
        except CheckFailed as e:
            if behind():
                raise CheckFailed('%s (gattd found bluetoothd\'s notify socket full %d times: bluetoothd fell '
                                  'behind the stream, and while behind it handles no D-Bus message and no '
                                  'hang-up, Central.acquire_notify)' % (e, behind()))
            raise

    found = central.characteristics(path, SERVICE, {'stream': STREAM, 'signals': SIGNALS, 'cmd': CMD})
    stream, signals, cmd = found['stream'], found['signals'], found['cmd']
    step('connected; stream, signals and cmd found')

    # The rest of the path on this guest: bluetoothd (one daemon serves both controllers, so
    # the central's side of each notification is in its figure too, the same on both paths),
    # the system bus daemon, and this central itself.
    others = {'bluetoothd': processes('bluetoothd'), 'dbus-daemon': processes('dbus-daemon'), 'central': [os.getpid()]}
    rates = {}
    for name, chrc, pattern in (('socket', stream, r'subscribed .*gatt\.id=stream.*path=socket'),
                                ('signal', signals, r'subscribed .*gatt\.id=signals')):
        # The central takes each stream through its own AcquireNotify socket, on both paths
        # alike, and ends it by closing that socket: while a stream runs no D-Bus call to
        # bluetoothd is needed, which on a slow guest answers none while gattd's socket keeps
        # it busy (Central.acquire_notify).
        central.acquire_notify(chrc)
        if name == 'socket':
            wait_log(pattern, 'gattd to log the socket subscription (AcquireNotify)')
            step('subscribed to stream: bluetoothd acquired a notify socket (gattd: "subscribed ... path=socket")')
        central.wait_notifications(chrc, 1, what='the first notification of %s' % name)
        before, cpu0, t0 = len(central.notifications[chrc]), cpu_seconds(args.gattd_pid), time.monotonic()
        others0 = {k: cpu_of(v) for k, v in others.items()}
        # The measurement: at least --seconds and at least MEASURED notifications, so that a
        # loaded machine (fewer a second) measures longer instead of failing; the bound is on
        # the stream stalling, not on its rate.
        central.pump_until(lambda: time.monotonic() - t0 >= args.seconds
                           and len(central.notifications[chrc]) - before >= MEASURED,
                           args.seconds + 60, 'at least %d notifications of %s' % (MEASURED, name))
        got, cpu, secs = (len(central.notifications[chrc]) - before, cpu_seconds(args.gattd_pid) - cpu0,
                          time.monotonic() - t0)
        others1 = {k: cpu_of(v) for k, v in others.items()}
        values = [struct.unpack('<I', v)[0] for v in central.notifications[chrc]]
        if any(b <= a for a, b in zip(values, values[1:])):
            raise CheckFailed('%s: counter values out of order: %s' % (name, values[:20]))
        rates[name] = (got / secs, 1000 * cpu / got)
        step('%s path: %d notifications in %.1f s = %.0f/s at the central, gattd CPU %.3f s per 1,000%s'
             % (name, got, secs, got / secs, 1000 * cpu / got,
                '; bluetoothd fell behind (gattd found its socket full %d times)' % behind() if behind() else ''))
        step('%s path, CPU s per 1,000 of the rest: %s' % (name, ', '.join(
            '%s %.3f' % (k, 1000 * (others1[k] - others0[k]) / got) for k in others)))
        central.release_notify(chrc)
        if name == 'socket':
            wait_log(r'unsubscribed .*gatt\.id=stream.*path=socket', 'gattd to see the notify socket closed')
            step('unsubscribed: bluetoothd closed the socket, gattd saw it ("unsubscribed ... path=socket")')
    print('RATES socket %.0f/s %.3f cpu-s/1k signal %.0f/s %.3f cpu-s/1k'
          % (rates['socket'] + rates['signal']), flush=True)

    for n in range(1, 21):
        central.write(cmd, bytes([n]), write_type='command')
    wait_log(r'write socket acquired .*gatt\.id=cmd', 'gattd to log the write socket (AcquireWrite)')
    value = central.read(cmd)
    if value != bytes([20]):
        raise CheckFailed('after 20 write commands cmd reads %r, expected 0x14' % value)
    step('20 write commands through gattd\'s write socket; cmd reads back 0x14')
    central.write(cmd, b'\xee' * 9, write_type='command')
    wait_log(r'write from the socket dropped .*gatt\.id=cmd', 'gattd to log the dropped 9-byte write')
    value = central.read(cmd)
    if value != bytes([20]):
        raise CheckFailed('after a 9-byte write (maxLength 8) cmd reads %r, expected 0x14 kept' % value)
    step('a 9-byte write was acknowledged by bluetoothd, dropped and logged by gattd; cmd still 0x14')
    central.disconnect(path)
    step('disconnected')


def main():
    parser = peer_arguments(__doc__)
    parser.add_argument('--gattd-log', required=True)
    parser.add_argument('--gattd-pid', type=int, required=True)
    parser.add_argument('--seconds', type=float, default=5.0)
    args = parser.parse_args()
    run(lambda: plan(args))


if __name__ == '__main__':
    main()
