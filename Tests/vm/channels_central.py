#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""channels_central.py: a central on kernel L2CAP sockets for gattd's channels (run by
scenarios/gattd-channels.sh with configs/channels.json). bluetoothd on the own adapter
connects to gattd and reads the PSM from Apple's PSM characteristic (as an iOS app does
before openL2CAPChannel); the channels are kernel sockets bound to the own adapter's address
with an LE address type, which makes them credit-based ones (Python's socket module cannot
name the address type, hence ctypes, as in longwrite_att.py). They ride the link bluetoothd
holds: a channel socket that has to make its own link can meet btvirt's emulated controller
while gattd's advertising is being switched off and on after a disconnection, and the
kernel then waits 40 s and fails with EINPROGRESS (Tests/vm/README.md, gattd-channels).

  connect                         bluetoothd on --adapter finds gattd at --peer and connects
                                  (services resolved): the link every step below uses
  read-psm UUID...                prints the PSM in the PSM characteristic of each service,
                                  in the order given (the link must be up)
  echo PSM BYTES [--kill PIDFILE] sends BYTES in SDUs of varied size (each numbered) while
                                  reading the echo; checks every SDU back, in order, none
                                  lost or doubled; with --kill, kills the pid in PIDFILE
                                  half way and expects the channel to close
  refused PSM                     the channel is refused (connect fails); prints the errno
  closed PSM                      the channel opens and the peripheral closes it at once
                                  (end of file or ECONNRESET before any SDU)
  held PSM                        binding PSM on any adapter (LE) fails with EADDRINUSE:
                                  gattd holds it (run in the guest, on gattd's kernel)
  long PSM SECONDS                opens the channel and echoes 1 KiB, prints "opened", then
                                  reads a line from standard input (the scenario's other
                                  steps run meanwhile), waits only for what remains of
                                  SECONDS since the open (measured from it) and echoes
                                  64 KiB in order on the same channel
  hold --holder ADDR              hci3 (--holder) advertises and bluetoothd on --adapter2
                                  connects to it and keeps the link (btvirt hands the
                                  peripheral the central's connection handle; see main())
  parallel PSM BYTES --own2 ADDR  two channels, from --own and --own2 (another controller),
                                  echo at once
  pair                            bluetoothd on --adapter pairs with gattd (Device1.Pair,
                                  this central's own agent, KeyboardDisplay: just works),
                                  connecting first if the link is gone
  link-up                         bluetoothd has a link from --adapter to --peer (fails if not)

usage: channels_central.py --adapter NAME --own ADDR --peer ADDR COMMAND ...
"""
import argparse
import ctypes
import errno
import os
import signal
import socket
import struct
import sys
import threading
import time

import dbus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import ADAPTER, DEVICE, Central, CheckFailed, at_address, bound, full_uuid  # noqa: E402
from centrals import HolderAdvertisement  # noqa: E402
from security import CentralAgent, pair, register_agent  # noqa: E402

AF_BLUETOOTH, BTPROTO_L2CAP, BDADDR_LE_PUBLIC = 31, 0, 1
SOL_BLUETOOTH, BT_SNDMTU, BT_RCVMTU = 274, 12, 13
SO_RCVBUFFORCE = 33
PSM_UUID = 'abdd3056-28fa-441d-a470-55a75a52553a'
# hold: the controller that advertises only so that another one can hold a link to it
HOLDER_ADAPTER = 'hci3'
# The central's receive MTU: the longest SDU gattd (and the program echoing) may send back.
CENTRAL_MTU = 2048
LIBC = ctypes.CDLL(None, use_errno=True)


def sockaddr_l2(address, psm):
    """struct sockaddr_l2: family, psm, bdaddr (reversed), cid 0, LE public (14 bytes)."""
    return struct.pack('<HH6sHBx', AF_BLUETOOTH, psm, bytes.fromhex(address.replace(':', ''))[::-1], 0,
                       BDADDR_LE_PUBLIC)


def links(own, peer):
    """The Central, the adapter (object path) whose Address is own, and the paths of its
    devices at peer that are connected."""
    central = Central()  # only its bus is used: the adapter is found by its Address
    objects = central.objects()
    adapters = [path for path, interfaces in objects.items()
                if str(interfaces.get(ADAPTER, {}).get('Address', '')).upper() == own.upper()]
    if len(adapters) != 1:
        raise CheckFailed('bluetoothd has %d adapters with Address %s' % (len(adapters), own))
    up = [path for path, interfaces in objects.items()
          if DEVICE in interfaces and str(interfaces[DEVICE].get('Adapter')) == adapters[0]
          and str(interfaces[DEVICE].get('Address', '')).upper() == peer.upper()
          and bool(interfaces[DEVICE].get('Connected'))]
    return central, adapters[0], up


def link_up(own, peer):
    """The Central and the device path of bluetoothd's link from own's adapter to peer;
    CheckFailed if there is none."""
    central, adapter, up = links(own, peer)
    if len(up) != 1:
        raise CheckFailed('no link to %s on %s (no Device1 with that Address is Connected)' % (peer, adapter))
    return central, up[0]


def read_psms(own, peer, services, seconds):
    """The PSM characteristic's value in each of services (UUIDs), read through bluetoothd
    over the link it holds. Until `seconds` have passed (times SLOW), a read that fails or a
    service that is missing is tried again: after gattd restarted, bluetoothd learns the
    new database from Service Changed while the old objects are still there."""
    central, device = link_up(own, peer)
    deadline = time.monotonic() + bound(seconds)
    while True:
        try:
            tree = central.gatt_tree(device)
            values = []
            for service in services:
                chrcs = tree.get(full_uuid(service), {}).get('chrcs', {})
                if PSM_UUID not in chrcs:
                    raise CheckFailed('service %s has no PSM characteristic (has %s)' % (service, sorted(chrcs)))
                values.append(central.read(chrcs[PSM_UUID]['path']))
            break
        except (CheckFailed, dbus.DBusException) as e:
            if time.monotonic() >= deadline:
                raise CheckFailed('reading the PSM characteristics: %s' % e)
            # the next try in half a second, bluetoothd's signals handled meanwhile
            again = time.monotonic() + 0.5
            central.pump_until(lambda: time.monotonic() >= again, 1, 'the next try', scaled=False)
    for service, value in zip(services, values):
        if len(value) != 2:
            raise CheckFailed('the PSM characteristic of %s holds %d bytes, not 2' % (service, len(value)))
    return [struct.unpack('<H', v)[0] for v in values]


def open_channel(own, peer, psm, timeout=40):
    """A connected LE credit-based channel to PSM on peer; OSError (errno) when refused."""
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    # Room for what arrives while the checks run (root: past rmem_max), for the same reason.
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    for step, address, number in (('bind', own, 0), ('connect', peer, psm)):
        if step == 'connect':
            # Bound with an LE address type first: only then does the kernel take BT_RCVMTU.
            sock.setsockopt(SOL_BLUETOOTH, BT_RCVMTU, struct.pack('<H', CENTRAL_MTU))
        raw = sockaddr_l2(address, number)
        if getattr(LIBC, step)(sock.fileno(), raw, len(raw)) != 0:
            err = ctypes.get_errno()
            sock.close()
            raise OSError(err, '%s %s psm %d: %s' % (step, address, number, os.strerror(err)))
    sock.settimeout(timeout)
    return sock


# Byte i of SDU n's payload is (n + i) & 0xFF: a slice of this, so checking keeps up with the
# channel (Debian 12's 6.1 kernel gives a central's credits back when an SDU arrives, not when
# it is read: a reader that falls behind its socket buffer loses SDUs).
PATTERN = bytes(range(256)) * (CENTRAL_MTU // 256 + 2)


def sdu(index, size):
    start = index & 0xFF
    return struct.pack('<I', index) + PATTERN[start:start + size - 4]


def sizes(total, limit):
    """SDU sizes of 4...limit bytes, varied, adding up to total."""
    out, index = [], 0
    while total > 0:
        size = min(total, 4 + (index * 211) % (limit - 3))
        size = max(size, 4) if total >= 4 else total
        out.append(size)
        total -= size
        index += 1
    return out


def echo(sock, total, kill=None, label='central', window=None):
    """Sends total bytes and checks them back; returns seconds. With kill: the program dies
    half way and the channel must close."""
    send_mtu = struct.unpack('<H', sock.getsockopt(SOL_BLUETOOTH, BT_SNDMTU, 2))[0]
    limit = min(send_mtu, CENTRAL_MTU)
    plan = sizes(total, limit)
    errors = []

    # With a window, at most that many bytes are sent and not yet echoed.
    echoed = threading.Condition()
    progress = {'echoed': 0, 'ended': False}

    def sender():
        sent = 0
        try:
            for index, size in enumerate(plan):
                if window:
                    with echoed:
                        while sent - progress['echoed'] + size > window and not progress['ended']:
                            echoed.wait(1)
                sock.sendall(sdu(index, size))
                sent += size
        except OSError as e:
            if kill is None:
                errors.append('send: %s' % e)

    started = time.monotonic()
    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    received = 0
    killed = False
    expected = 0          # the next SDU's index
    missing, late, doubled, first_problem = set(), 0, 0, None
    while expected < len(plan):
        if kill and not killed and received >= total // 2:
            with open(kill) as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)
            killed = True
        try:
            got = sock.recv(CENTRAL_MTU + 1)
        except OSError as e:
            if killed:
                print('%s: the channel closed after the program was killed (%s) at %d of %d bytes'
                      % (label, e.strerror, received, total))
                return time.monotonic() - started
            if first_problem:
                break
            raise CheckFailed('%s: recv after %d bytes: %s' % (label, received, e))
        if not got:
            if killed:
                print('%s: the channel closed after the program was killed, at %d of %d bytes' % (label, received, total))
                return time.monotonic() - started
            if first_problem:
                break
            raise CheckFailed('%s: the channel closed after %d of %d bytes' % (label, received, total))
        seen = struct.unpack('<I', got[:4])[0] if len(got) >= 4 else None
        if seen is not None and expected <= seen < len(plan) and got == sdu(seen, plan[seen]):
            if seen > expected:
                # SDUs expected...seen-1 never came: count them, go on reading to see how
                # many more go missing (the report says where the channel loses data).
                missing.update(range(expected, seen))
                first_problem = first_problem or 'SDU %d (byte %d) missing' % (expected, sum(plan[:expected]))
                sock.settimeout(10)
            expected = seen + 1
            received += len(got)
            if window:
                with echoed:
                    progress['echoed'] = received
                    echoed.notify()
            continue
        if seen is not None and seen in missing and got == sdu(seen, plan[seen]):
            missing.discard(seen)  # out of order: it came after a later one
            late += 1
            received += len(got)
        elif seen is not None and seen < expected:
            doubled += 1
            first_problem = first_problem or 'SDU %d came again after SDU %d' % (seen, expected - 1)
        else:
            first_problem = first_problem or 'SDU %d (%d bytes) came back as %d bytes numbered %s' % (
                expected, plan[expected], len(got), seen)
            raise CheckFailed('%s: %s' % (label, first_problem))
    while first_problem and missing:  # late ones may still come after the last
        try:
            got = sock.recv(CENTRAL_MTU + 1)
        except OSError:
            break
        seen = struct.unpack('<I', got[:4])[0] if len(got) >= 4 else None
        if seen not in missing:
            break
        missing.discard(seen)
        late += 1
        received += len(got)
    if first_problem:
        raise CheckFailed('%s: %s; of %d SDUs %d came after a later one, %d never came, %d came twice; '
                          '%d bytes received of %d, last SDU seen %d'
                          % (label, first_problem, len(plan), late, len(missing) + len(plan) - expected, doubled,
                             received, total, expected - 1))
    if kill:
        raise CheckFailed('%s: the echo went on after the program was killed' % label)
    thread.join(30)
    if errors:
        raise CheckFailed('%s: %s' % (label, errors[0]))
    return time.monotonic() - started


def closed_at_once(own, peer, psm):
    """The channel opens (the peripheral's kernel accepted it) and the peripheral closes it
    before sending anything: seconds from the connect to the close."""
    started = time.monotonic()
    try:
        sock = open_channel(own, peer, psm, timeout=bound(10))
    except ConnectionResetError:
        # The close came before connect() returned: the kernel answered success (a refusal
        # would be ECONNREFUSED), then the disconnection ended the wait.
        return time.monotonic() - started
    try:
        got = sock.recv(CENTRAL_MTU + 1)
    except ConnectionResetError:
        got = b''
    except socket.timeout:
        raise CheckFailed('the channel to PSM %d opened and stayed open for %d s' % (psm, bound(10)))
    finally:
        sock.close()
    if got:
        raise CheckFailed('the channel to PSM %d opened and carried %d bytes; it should have been closed' % (psm, len(got)))
    return time.monotonic() - started


def held(psm):
    """Binding PSM with an LE address type on any adapter fails with EADDRINUSE."""
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    raw = sockaddr_l2('00:00:00:00:00:00', psm)
    result = LIBC.bind(sock.fileno(), raw, len(raw))
    err = ctypes.get_errno()
    sock.close()
    if result == 0:
        raise CheckFailed('PSM %d could be bound: nobody holds it' % psm)
    if err != errno.EADDRINUSE:
        raise CheckFailed('binding PSM %d failed with %s, not EADDRINUSE' % (psm, os.strerror(err)))
    return 'binding PSM %d: %s (EADDRINUSE)' % (psm, os.strerror(err))


def long_lived(own, peer, psm, seconds):
    """A channel that stays open: opened and used, then, after the caller's line on standard
    input and what remains of `seconds` since the open, used again."""
    opened = time.monotonic()
    sock = open_channel(own, peer, psm)
    echo(sock, 1024, label='long-lived channel, at its open', window=65536)
    print('opened: the channel to PSM %d echoed 1024 bytes' % psm, flush=True)
    sys.stdin.readline()
    remaining = seconds - (time.monotonic() - opened)
    print('the other steps took %.1f s since the open; waiting %.1f s more' % (seconds - remaining, max(remaining, 0)),
          flush=True)
    if remaining > 0:
        time.sleep(remaining)  # the subject is the channel's age: at least `seconds` old
    age = time.monotonic() - opened
    echo(sock, 65536, label='long-lived channel, %.1f s after its open' % age, window=65536)
    sock.close()
    return age


def connect(adapter, peer):
    """bluetoothd on adapter forgets peer, finds it advertising and connects; a line saying so."""
    central = Central.fresh(adapter, peer)
    path, _ = central.discover(at_address(peer), what='gattd (%s) from %s' % (peer, adapter))
    central.connect(path)
    return '%s connected to gattd (%s), services resolved: the link the channels use' % (adapter, peer)


def hold(adapter, holder):
    """bluetoothd on adapter connects to holder, which advertises only for that, and keeps the
    link after this process ends (bluetoothd's own connection). btvirt tells the peripheral
    the central's connection handle, and a controller numbers its links from the same first
    handle: without a link held first, this adapter's link to gattd would reach gattd's
    controller with the handle of the first central's (Tests/vm/README.md, gattd-centrals)."""
    central = Central.fresh(adapter, holder)
    holder_central = Central(HOLDER_ADAPTER)
    holder_central.power_on()
    advertisement = HolderAdvertisement(central.bus)
    holder_central.call(holder_central.adapter_path, 'org.bluez.LEAdvertisingManager1', 'RegisterAdvertisement',
                        dbus.ObjectPath(advertisement.PATH), dbus.Dictionary({}, signature='sv'))
    path, _ = central.discover(at_address(holder), what='%s (%s)' % (HOLDER_ADAPTER, holder))
    try:
        central.call(path, DEVICE, 'Connect', timeout=60)
    except dbus.DBusException as e:
        raise CheckFailed('%s could not connect to %s: %s: %s'
                          % (adapter, holder, e.get_dbus_name(), e.get_dbus_message()))
    holder_central.call(holder_central.adapter_path, 'org.bluez.LEAdvertisingManager1', 'UnregisterAdvertisement',
                        dbus.ObjectPath(advertisement.PATH))
    return '%s holds a link to %s (%s): its next link gets another handle' % (adapter, HOLDER_ADAPTER, holder)


def pair_with(adapter, own, peer):
    """bluetoothd on adapter (own's) pairs with peer, this central's own agent answering for
    the central (just works); a line saying so. A link that a failed pairing ended (the
    kernel disconnects then, and 5.82 drops the device object soon after) is made again
    first: found by scanning if bluetoothd no longer knows peer, then Device1.Connect."""
    central, adapter_path, up = links(own, peer)
    central = Central(adapter)
    made = ''
    if up:
        device = up[0]
    else:
        known = [path for path, interfaces in central.objects().items()
                 if DEVICE in interfaces and str(interfaces[DEVICE].get('Adapter')) == adapter_path
                 and str(interfaces[DEVICE].get('Address', '')).upper() == peer.upper()]
        device = known[0] if known else central.discover(at_address(peer), what='gattd (%s)' % peer)[0]
        central.connect(device)
        made = 'the link made again (%s); ' % ('bluetoothd still knew gattd' if known else 'found by scanning')
    agent = CentralAgent(central.bus)
    register_agent(central, agent, 'KeyboardDisplay')
    started = time.monotonic()
    pair(central, device)
    return '%spaired (just works) in %.1f s; this central\'s agent was asked: %s' % (
        made, time.monotonic() - started, ', '.join(agent.calls) or 'nothing')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--adapter', default='hci1', help="the own adapter's name (bluetoothd's)")
    parser.add_argument('--own', required=True, help="the own adapter's address (the channel sockets')")
    parser.add_argument('--own2', help="another adapter's address (parallel's second channel)")
    parser.add_argument('--adapter2', default='hci2', help='the adapter that holds a link (hold)')
    parser.add_argument('--holder', help="hci3's address (hold)")
    parser.add_argument('--peer', required=True)
    parser.add_argument('command', choices=['connect', 'read-psm', 'echo', 'refused', 'closed', 'held', 'long', 'hold',
                                            'parallel', 'pair', 'link-up'])
    parser.add_argument('args', nargs='*')
    parser.add_argument('--kill')
    parser.add_argument('--window', type=int, help='bytes sent and not yet echoed at most (default: no limit)')
    parser.add_argument('--retry', type=float, default=0,
                        help='read-psm: seconds (times SLOW) in which failed reads are tried again')
    args = parser.parse_intermixed_args()
    try:
        if args.command == 'connect':
            print(connect(args.adapter, args.peer))
        elif args.command == 'read-psm':
            print(' '.join(str(psm) for psm in read_psms(args.own, args.peer, args.args, args.retry)))
        elif args.command == 'echo':
            psm, total = int(args.args[0]), int(args.args[1])
            sock = open_channel(args.own, args.peer, psm)
            send_mtu = struct.unpack('<H', sock.getsockopt(SOL_BLUETOOTH, BT_SNDMTU, 2))[0]
            seconds = echo(sock, total, kill=args.kill, window=args.window)
            sock.close()
            if not args.kill:
                print('echo: %d bytes each way in order, nothing lost or doubled, in %.1f s (%.0f B/s each way), '
                      'gattd\'s MTU %d' % (total, seconds, total / seconds, send_mtu))
        elif args.command == 'refused':
            psm = int(args.args[0])
            started = time.monotonic()
            try:
                sock = open_channel(args.own, args.peer, psm)
            except OSError as e:
                print('refused: %s (%s) after %.1f s' % (e.strerror, errno.errorcode.get(e.errno, e.errno),
                                                        time.monotonic() - started))
                return 0
            sock.close()
            raise CheckFailed('the channel to PSM %d opened; it should have been refused' % psm)
        elif args.command == 'closed':
            psm = int(args.args[0])
            print('closed: the channel to PSM %d opened and the peripheral closed it %.2f s after the connect'
                  % (psm, closed_at_once(args.own, args.peer, psm)))
        elif args.command == 'held':
            print(held(int(args.args[0])))
        elif args.command == 'long':
            psm, seconds = int(args.args[0]), float(args.args[1])
            age = long_lived(args.own, args.peer, psm, seconds)
            print('long-lived: the channel to PSM %d was open %.1f s (more than %.0f s) and echoed 65536 bytes '
                  'in order, nothing lost or doubled' % (psm, age, seconds))
        elif args.command == 'hold':
            print(hold(args.adapter2, args.holder))
        elif args.command == 'pair':
            print(pair_with(args.adapter, args.own, args.peer))
        elif args.command == 'link-up':
            _, device = link_up(args.own, args.peer)
            print('the link to %s is up (%s: Device1.Connected)' % (args.peer, device))
        elif args.command == 'parallel':
            psm, total = int(args.args[0]), int(args.args[1])
            results, failures = {}, []

            def one(own, label):
                try:
                    sock = open_channel(own, args.peer, psm)
                    results[label] = echo(sock, total, label=label, window=args.window)
                    sock.close()
                except (OSError, CheckFailed) as e:
                    failures.append('%s: %s' % (label, e))

            labels = ((args.own, 'channel 1 from %s' % args.own), (args.own2, 'channel 2 from %s' % args.own2))
            threads = [threading.Thread(target=one, args=pair_) for pair_ in labels]
            for t in threads:
                t.start()
            for t in threads:
                t.join(600)
            if failures or len(results) != 2:
                raise CheckFailed('; '.join(failures) or 'a central did not finish')
            print('parallel: two channels, from %s and %s, each echoed %d bytes in order (%.1f s, %.1f s)'
                  % (args.own, args.own2, total, results[labels[0][1]], results[labels[1][1]]))
    except (CheckFailed, OSError, dbus.DBusException) as e:
        print('FAIL: %s' % e)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
