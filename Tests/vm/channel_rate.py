#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""channel_rate.py: bytes per second from gattd to one central, over an L2CAP channel and
over gattd's fastest notification path, at the same MTU (run by
scenarios/bench-channel-rate.sh, BENCHMARKS.md "L2CAP channels"). Both centrals are kernel
sockets on hci1, so that the central's own stack adds as little as it can:

  notify --uuid UUID --mtu M --seconds S   a raw ATT bearer (fixed channel 4, as
        longwrite_att.py) that exchanges ATT MTU M, enables notifications of UUID (Client
        Characteristic Configuration, Write Request) and counts the notifications' value
        bytes for S seconds from the first one; the values carry a 4-byte counter gattd
        increments every millisecond, so values gattd replaced before they left are
        counted as gaps
  channel --psm P --mtu M --seconds S      an LE credit-based channel to P with receive MTU
        M (the peer's send MTU: SDUs of at most M bytes); counts the SDUs' bytes for S
        seconds from the first one; every SDU must be M bytes (the program sends full ones)

With --gattd-pid (and --bluetoothd-pid) it reads their on-CPU time
(/proc/PID/task/*/schedstat) over the same window. Prints one line:

  RATE path=notify|channel mtu=M bytes=N secs=T bytes_per_s=R units=K gaps=G
       gattd_cpu_ms_per_mib=C bluetoothd_cpu_ms_per_mib=B

usage: channel_rate.py --own ADDR --peer ADDR [--gattd-pid PID] [--bluetoothd-pid PID] COMMAND ...
"""
import argparse
import ctypes
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import CheckFailed, run  # noqa: E402
from longwrite_att import MTU_REQ, MTU_RSP, ERROR, Att, AttError  # noqa: E402

AF_BLUETOOTH, BTPROTO_L2CAP, BDADDR_LE_PUBLIC = 31, 0, 1
SOL_BLUETOOTH, BT_SNDMTU, BT_RCVMTU = 274, 12, 13
SO_RCVBUFFORCE = 33
FIND_INFO_REQ, WRITE_REQ, NOTIFICATION = 0x04, 0x12, 0x1B
CCC = 0x2902
LIBC = ctypes.CDLL(None, use_errno=True)


def cpu_ns(pid):
    """On-CPU nanoseconds of pid's threads; None without a pid."""
    if not pid:
        return None
    total = 0
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/schedstat' % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


class RateAtt(Att):
    """An ATT bearer at MTU `mtu`: the peer's own MTU exchange is answered with it too."""

    def __init__(self, own, peer, mtu):
        self.mtu = mtu
        super().__init__(own, peer)

    def _peer(self, pdu):
        if pdu[0] == MTU_REQ:
            self.peer_requests.append(pdu[0])
            self.sock.send(struct.pack('<BH', MTU_RSP, self.mtu))
        else:
            super()._peer(pdu)

    def ccc_of(self, value_handle):
        """The Client Characteristic Configuration descriptor after value_handle (Find Information)."""
        start = value_handle + 1
        while start <= 0xFFFF:
            try:
                rsp = self.request(struct.pack('<BHH', FIND_INFO_REQ, start, 0xFFFF))
            except AttError as e:
                if e.code == 0x0A:
                    break
                raise
            if rsp[1] != 1:  # 128-bit UUIDs: no CCC among them
                break
            for i in range(2, len(rsp), 4):
                handle, uuid = struct.unpack('<HH', rsp[i:i + 4])
                if uuid == CCC:
                    return handle
                start = handle + 1
        raise CheckFailed('no Client Characteristic Configuration after handle 0x%04x' % value_handle)


def report(path, mtu, count, secs, units, gaps, cpu, bt_cpu):
    mib = count / 2**20
    per = lambda ns: '%.1f' % (ns / 1e6 / mib) if ns is not None and mib else '-'  # noqa: E731
    print('RATE path=%s mtu=%d bytes=%d secs=%.2f bytes_per_s=%.0f units=%d gaps=%d gattd_cpu_ms_per_mib=%s '
          'bluetoothd_cpu_ms_per_mib=%s' % (path, mtu, count, secs, count / secs, units, gaps, per(cpu), per(bt_cpu)),
          flush=True)


def notify(args):
    att = RateAtt(args.own, args.peer, args.mtu)
    try:
        rsp = att.request(struct.pack('<BH', MTU_REQ, args.mtu))
        mtu = min(args.mtu, struct.unpack('<H', rsp[1:3])[0])
        if mtu != args.mtu:
            raise CheckFailed('gattd\'s side answered ATT MTU %d; asked for %d' % (mtu, args.mtu))
        handles = att.characteristics()
        if args.uuid not in handles:
            raise CheckFailed('characteristic %s not found (have %s)' % (args.uuid, sorted(handles)))
        value_handle = handles[args.uuid]
        ccc = att.ccc_of(value_handle)
        att.request(struct.pack('<BHH', WRITE_REQ, ccc, 1))
        first = last = None
        count = units = gaps = 0
        t0 = deadline = None
        c0 = b0 = None
        while deadline is None or time.monotonic() < deadline:
            pdu = att.sock.recv(1024)
            if pdu[0] != NOTIFICATION:
                if pdu[0] != ERROR and not pdu[0] & 1:  # a request of the peer's
                    att._peer(pdu)
                continue
            handle = struct.unpack('<H', pdu[1:3])[0]
            value = pdu[3:]
            if handle != value_handle:
                continue
            if len(value) != mtu - 3:
                raise CheckFailed('a notification of %d bytes at ATT MTU %d (expected %d)' % (len(value), mtu, mtu - 3))
            counter = struct.unpack('<I', value[:4])[0]
            if t0 is None:  # the window opens at the first notification
                t0, deadline, first = time.monotonic(), time.monotonic() + args.seconds, counter
                c0, b0 = cpu_ns(args.gattd_pid), cpu_ns(args.bluetoothd_pid)
            else:
                if counter <= last:
                    raise CheckFailed('counter went from %d to %d' % (last, counter))
                gaps += counter - last - 1
                count += len(value)
                units += 1
            last = counter
        secs = time.monotonic() - t0
        c1, b1 = cpu_ns(args.gattd_pid), cpu_ns(args.bluetoothd_pid)
        att.request(struct.pack('<BHH', WRITE_REQ, ccc, 0))
    finally:
        att.close()
    report('notify', mtu, count, secs, units, gaps, c1 - c0 if c0 is not None else None,
           b1 - b0 if b0 is not None else None)


def sockaddr_l2(address, psm):
    return struct.pack('<HH6sHBx', AF_BLUETOOTH, psm, bytes.fromhex(address.replace(':', ''))[::-1], 0,
                       BDADDR_LE_PUBLIC)


def channel(args):
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    for step, address, number in (('bind', args.own, 0), ('connect', args.peer, args.psm)):
        if step == 'connect':
            sock.setsockopt(SOL_BLUETOOTH, BT_RCVMTU, struct.pack('<H', args.mtu))
        raw = sockaddr_l2(address, number)
        if getattr(LIBC, step)(sock.fileno(), raw, len(raw)) != 0:
            err = ctypes.get_errno()
            sock.close()
            raise CheckFailed('%s %s psm %d: %s' % (step, address, number, os.strerror(err)))
    sock.settimeout(30)
    try:
        count = units = 0
        t0 = deadline = None
        c0 = b0 = None
        while deadline is None or time.monotonic() < deadline:
            sdu = sock.recv(65536)
            if not sdu:
                raise CheckFailed('the channel closed after %d bytes' % count)
            if len(sdu) != args.mtu:
                raise CheckFailed('an SDU of %d bytes; the program sends %d (the MTU)' % (len(sdu), args.mtu))
            if t0 is None:
                t0, deadline = time.monotonic(), time.monotonic() + args.seconds
                c0, b0 = cpu_ns(args.gattd_pid), cpu_ns(args.bluetoothd_pid)
                continue
            count += len(sdu)
            units += 1
        secs = time.monotonic() - t0
        c1, b1 = cpu_ns(args.gattd_pid), cpu_ns(args.bluetoothd_pid)
    finally:
        sock.close()
    report('channel', args.mtu, count, secs, units, 0, c1 - c0 if c0 is not None else None,
           b1 - b0 if b0 is not None else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--own', required=True)
    parser.add_argument('--peer', required=True)
    parser.add_argument('--gattd-pid', type=int)
    parser.add_argument('--bluetoothd-pid', type=int)
    commands = parser.add_subparsers(dest='command', required=True)
    n = commands.add_parser('notify')
    n.add_argument('--uuid', required=True)
    n.add_argument('--mtu', type=int, required=True)
    n.add_argument('--seconds', type=float, default=8)
    c = commands.add_parser('channel')
    c.add_argument('--psm', type=lambda s: int(s, 0), required=True)
    c.add_argument('--mtu', type=int, required=True)
    c.add_argument('--seconds', type=float, default=8)
    args = parser.parse_args()
    run(lambda: notify(args) if args.command == 'notify' else channel(args))


if __name__ == '__main__':
    main()
