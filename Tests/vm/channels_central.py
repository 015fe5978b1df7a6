#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""channels_central.py: a central on kernel L2CAP sockets for gattd's channels (run by
scenarios/gattd-channels.sh with configs/channels.json). It reads the PSM from Apple's PSM
characteristic over ATT (as an iOS app does before openL2CAPChannel) and opens an LE
credit-based channel to it: the socket is bound to the own adapter's address with an LE
address type, which makes it a credit-based one (Python's socket module cannot name the
address type, hence ctypes, as in longwrite_att.py).

  read-psm                        prints the PSM of every PSM characteristic, in handle order
  echo PSM BYTES [--kill PIDFILE] sends BYTES in SDUs of varied size (each numbered) while
                                  reading the echo; checks every SDU back, in order, none
                                  lost or doubled; with --kill, kills the pid in PIDFILE
                                  half way and expects the channel to close
  refused PSM                     the channel is refused (connect fails)
  parallel PSM BYTES --own2 ADDR  two channels (from --own and --own2, which may be the same)
                                  echo at once
  link-up                         bluetoothd has a link from --own to --peer (fails if not)
  drop-link                       ends the link from --own to --peer if one is up
                                  (Device1.Disconnect on the adapter whose Address is --own,
                                  then Connected false): read-psm's raw ATT socket must make
                                  its own link (see read_psms)

usage: channels_central.py --own ADDR --peer ADDR COMMAND ...
"""
import argparse
import ctypes
import os
import signal
import socket
import struct
import sys
import threading
import time
import uuid as uuidlib

import dbus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import ADAPTER, DEVICE, Central, CheckFailed  # noqa: E402
from longwrite_att import READ_BY_TYPE_REQ, Att, AttError  # noqa: E402

AF_BLUETOOTH, BTPROTO_L2CAP, BDADDR_LE_PUBLIC = 31, 0, 1
SOL_BLUETOOTH, BT_SNDMTU, BT_RCVMTU = 274, 12, 13
SO_RCVBUFFORCE = 33
PSM_UUID = 'abdd3056-28fa-441d-a470-55a75a52553a'
# The central's receive MTU: the longest SDU gattd (and the program echoing) may send back.
CENTRAL_MTU = 2048
LIBC = ctypes.CDLL(None, use_errno=True)


def sockaddr_l2(address, psm):
    """struct sockaddr_l2: family, psm, bdaddr (reversed), cid 0, LE public (14 bytes)."""
    return struct.pack('<HH6sHBx', AF_BLUETOOTH, psm, bytes.fromhex(address.replace(':', ''))[::-1], 0,
                       BDADDR_LE_PUBLIC)


def read_psms(own, peer):
    """Every PSM characteristic's value, in handle order (Read By Type 0x2803, then Read).

    The raw ATT socket (fixed CID 4) works only if it makes the link: when a channel socket
    made it, bluetoothd on own's adapter put its ATT on it and keeps it up, and this connect
    gets EBUSY (one user per fixed channel and link). drop-link ends such a link first."""
    att = Att(own, peer)
    try:
        handles, start = [], 1
        while start <= 0xFFFF:
            try:
                rsp = att.request(struct.pack('<BHHH', READ_BY_TYPE_REQ, start, 0xFFFF, 0x2803))
            except AttError as e:
                if e.code == 0x0A:
                    break
                raise
            size, last = rsp[1], start
            for i in range(2, len(rsp), size):
                entry = rsp[i:i + size]
                last, _, value_handle = struct.unpack('<HBH', entry[:5])
                raw = entry[5:]
                if len(raw) == 16 and str(uuidlib.UUID(bytes=raw[::-1])) == PSM_UUID:
                    handles.append(value_handle)
            start = last + 1
        values = [att.read_long(h) for h in handles]
        for value in values:
            if len(value) != 2:
                raise CheckFailed('a PSM characteristic holds %d bytes, not 2' % len(value))
        return [struct.unpack('<H', v)[0] for v in values]
    finally:
        att.close()


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
    """A line saying that bluetoothd has a link from own's adapter to peer; CheckFailed if not."""
    _, adapter, up = links(own, peer)
    if not up:
        raise CheckFailed('no link to %s on %s (Device1.Connected is not true)' % (peer, adapter))
    return 'link to %s on %s is up (Device1.Connected)' % (peer, adapter)


def drop_link(own, peer):
    """Ends the link from own's adapter to peer, if bluetoothd has one up; returns a line
    saying which."""
    central, adapter, up = links(own, peer)
    if not up:
        return 'no link to %s on %s' % (peer, adapter)
    for path in up:
        try:
            central.disconnect(path)  # MGMT Disconnect: ends the link whoever holds it
        except dbus.DBusException as e:
            raise CheckFailed('drop-link: Device1.Disconnect of %s: %s: %s'
                              % (peer, e.get_dbus_name(), e.get_dbus_message()))
    return 'link to %s on %s dropped (Device1.Disconnect, then Connected false)' % (peer, adapter)


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--own', required=True)
    parser.add_argument('--own2')
    parser.add_argument('--peer', required=True)
    parser.add_argument('command', choices=['read-psm', 'echo', 'refused', 'parallel', 'link-up', 'drop-link'])
    parser.add_argument('args', nargs='*')
    parser.add_argument('--kill')
    parser.add_argument('--window', type=int, help='bytes sent and not yet echoed at most (default: no limit)')
    args = parser.parse_args()
    try:
        if args.command == 'read-psm':
            print(' '.join(str(psm) for psm in read_psms(args.own, args.peer)))
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
            try:
                sock = open_channel(args.own, args.peer, psm)
            except OSError as e:
                print('refused: %s' % e.strerror)
                return 0
            sock.close()
            raise CheckFailed('the channel to PSM %d opened; it should have been refused' % psm)
        elif args.command == 'link-up':
            print(link_up(args.own, args.peer))
        elif args.command == 'drop-link':
            print(drop_link(args.own, args.peer))
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

            threads = [threading.Thread(target=one, args=(own, label))
                       for own, label in ((args.own, 'channel 1'), (args.own2, 'channel 2'))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(600)
            if failures or len(results) != 2:
                raise CheckFailed('; '.join(failures) or 'a central did not finish')
            print('parallel: two channels each echoed %d bytes in order (%.1f s, %.1f s)'
                  % (total, results['channel 1'], results['channel 2']))
    except (CheckFailed, OSError) as e:
        print('FAIL: %s' % e)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
