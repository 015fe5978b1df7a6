# SPDX-License-Identifier: MIT
"""EATT as Raspberry Pi OS bookworm ships it (issue 31): bluetoothd 5.66 with its default
`[GATT] Channels = 3` (Debian 12's main.conf leaves it unset) and the kernel's LE ECRED on
(`enable_ecred`), against gattd serving configs/eatt.json. Run by scenarios/gattd-eatt.sh.

  raw       a central that speaks ATT itself (kernel sockets on hci1: the ATT fixed channel
            for the link, and two LE ECRED sockets to PSM 39, the EATT bearers, receive MTU
            64) sends its requests on both bearers at once: reads of `long` (a stored
            300-byte value, each piece on both bearers before either answer is read); long
            reads of `served` (a handler program answers a new 200-byte value each time):
            two that start together are one answer (a second long read that starts while
            the first is under way must not make the first one's pieces come from another
            value), the next round a new one; long writes to `cmd` and `cmd2` at once
            (one prepare queue per central: refused whole, 0x06) and to `rel1` and `rel2`
            (reliable-write: both whole); then it subscribes to `tick` (acquireNotify),
            `sig` (signal path) and `ind` (indications), and values set with gattctl
            arrive from the three bearers, each once.
  central   bluetoothd's own client on hci1 as the central, for runs by hand (the scenario
            does not run it: with 5.66 on both ends bluetoothd drops the bearers both
            adapters opened at once, docs/bluez-contract.md §13): it connects, waits until
            bluetoothd says the EATT channels are connected, subscribes to `tick`, `sig` and
            `ind` at once, then, three times over, sends reads of `long`, `served`, `tick`,
            `ind` and a 200-byte write to `cmd` at once; then values set with gattctl reach
            it, each once.
  handler   the handler program for `served` (python/gattd): answers each read with a new
            value, 40 times "NNNN|" for its count N.
"""
import argparse
import ctypes
import os
import re
import socket
import select
import struct
import subprocess
import sys
import threading
import time

import dbus

from bluezcentral import CheckFailed, Central, at_address, bound, run, step
from longwrite_att import (AF_BLUETOOTH, BLOB_REQ, BTPROTO_L2CAP, ERROR, EXEC_REQ, EXEC_RSP, PREP_REQ, PREP_RSP,
                           READ_REQ, RESPONSES, Att, AttError, expect_att_error, sockaddr_l2)

SERVICE = '5ec0de10-1234-5678-1234-56789abc0031'
LONG, SERVED, CMD, TICK, IND, SIG, CMD2, REL1, REL2 = ('5ec0de1%d-1234-5678-1234-56789abc0031' % n
                                                     for n in range(1, 10))
LONG_VALUE = b''.join(b'%04d-long|' % n for n in range(0, 300, 10))
ROUNDS = 3


def gattctl(args, *words):
    done = subprocess.run([args.gattctl] + list(words), capture_output=True, text=True, timeout=bound(30))
    if done.returncode != 0:
        raise CheckFailed('gattctl %s exited %d: %s' % (' '.join(words), done.returncode,
                                                       (done.stdout + done.stderr).strip()))
    return done.stdout


def eatt_channels(args):
    """How many EATT channels bluetoothd attached so far (both sides: it is one daemon)."""
    with open(args.bluetoothd_log, errors='replace') as f:
        return sum('EATT channel connected' in line for line in f)


def one_value(value, what):
    """A handler-served long read is one answer: 40 times the same "NNNN|"."""
    if len(value) != 200 or value != value[:5] * 40 or not re.fullmatch(rb'\d{4}\|', value[:5]):
        raise CheckFailed('%s is not one answer of the handler: %r' % (what, value))
    return int(value[:4])


def phase_central(args):
    central = Central.fresh(args.adapter, args.peer)
    path, _ = central.discover(at_address(args.peer), what='gattd')
    before = eatt_channels(args)
    central.connect(path)
    # Channels = 3: the ATT fixed channel and two EATT bearers, attached on each side.
    central.pump_until(lambda: eatt_channels(args) - before >= 4, 30, 'bluetoothd to connect EATT channels')
    step('bluetoothd connected %d EATT channels (both sides)' % (eatt_channels(args) - before))
    chrcs = central.characteristics(path, SERVICE, {'long': LONG, 'served': SERVED, 'cmd': CMD, 'tick': TICK,
                                                     'ind': IND, 'sig': SIG})
    for name in ('tick', 'sig', 'ind'):
        central.notifications[chrcs[name]] = []
    central.together([central.send(chrcs[n], 'org.bluez.GattCharacteristic1', 'StartNotify')
                      for n in ('tick', 'sig', 'ind')])
    central.pump_until(lambda: all(central.prop(chrcs[n], 'org.bluez.GattCharacteristic1', 'Notifying')
                                   for n in ('tick', 'sig', 'ind')), 20, 'Notifying on tick, sig and ind')
    step('subscribed to tick (socket), sig (signal) and ind (indications) at once')

    served_seen = []
    for round_ in range(1, ROUNDS + 1):
        written = bytes((round_ * 7 + i) % 256 for i in range(200))
        empty = dbus.Dictionary({}, signature='sv')
        calls = [central.send(chrcs['long'], 'org.bluez.GattCharacteristic1', 'ReadValue', empty),
                 central.send(chrcs['served'], 'org.bluez.GattCharacteristic1', 'ReadValue', empty),
                 central.send(chrcs['cmd'], 'org.bluez.GattCharacteristic1', 'WriteValue',
                              dbus.Array(written, signature='y'), empty),
                 central.send(chrcs['tick'], 'org.bluez.GattCharacteristic1', 'ReadValue', empty),
                 central.send(chrcs['ind'], 'org.bluez.GattCharacteristic1', 'ReadValue', empty)]
        long_value, served, _, _, _ = central.together(calls)
        if bytes(long_value) != LONG_VALUE:
            raise CheckFailed('round %d: long read %r' % (round_, bytes(long_value)))
        served_seen.append(one_value(bytes(served), 'round %d: served' % round_))
        stored = bytes(central.read(chrcs['cmd']))
        if stored != written:
            raise CheckFailed('round %d: cmd reads back %s, wrote %s' % (round_, stored.hex(), written.hex()))
        step('round %d: long (300 bytes), served (answer %d), a 200-byte write to cmd and two reads at once'
             % (round_, served_seen[-1]))
    if len(set(served_seen)) != ROUNDS:
        raise CheckFailed('the handler should answer each read anew: %s' % served_seen)

    # bluetoothd's client reports a read's value as a Value change too: the rounds' reads of
    # tick and ind are not notifications.
    for name in ('tick', 'sig', 'ind'):
        central.notifications[chrcs[name]] = []
    for n in range(1, 4):
        gattctl(args, 'set', 'tick', '--uint16', str(n))
        gattctl(args, 'set', 'sig', '--uint16', str(10 + n))
        gattctl(args, 'set', 'ind', '--uint16', str(20 + n))
    wanted = {'tick': [1, 2, 3], 'sig': [11, 12, 13], 'ind': [21, 22, 23]}
    for name, values in wanted.items():
        got = central.wait_notifications(chrcs[name], 3, what='%s values' % name)
        numbers = [int.from_bytes(v, 'little') for v in got]
        # Each value may go out on another bearer, and ATT orders only within one bearer.
        if sorted(numbers) != values:
            raise CheckFailed('%s arrived as %s, expected %s' % (name, numbers, values))
        step('%s: %s' % (name, numbers))
    step('notifications (socket and signal path) and indications all arrived')
    central.together([central.send(chrcs[n], 'org.bluez.GattCharacteristic1', 'StopNotify')
                      for n in ('tick', 'sig', 'ind')])
    central.disconnect(path)
    step('disconnected')


SOL_BLUETOOTH, BT_RCVMTU, BT_MODE, BT_MODE_EXT_FLOWCTL, EATT_PSM = 274, 13, 15, 0x04, 0x27
FIND_INFO_REQ, WRITE_REQ, NOTIFY, INDICATE, CCC_UUID = 0x04, 0x12, 0x1B, 0x1D, 0x2902
# The raw bearers' receive MTU, the least ECRED allows: a 150-byte value takes several pieces.
BEARER_MTU = 64


class Bearer(Att):
    """An EATT bearer: an LE ECRED L2CAP socket to PSM 39, over the link the ATT fixed
    channel's socket made. Its receive MTU is 64 (the least ECRED allows), so a 200-byte
    value takes several pieces."""

    def __init__(self, own, peer, timeout=40):
        self.sock = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
        libc = ctypes.CDLL(None, use_errno=True)
        for call, address, psm in ((libc.bind, own, 0), (libc.connect, peer, EATT_PSM)):
            if call is libc.connect:
                # The kernel takes these of a socket bound to an LE address only: the mode
                # (one byte) and the receive MTU (two).
                self.sock.setsockopt(SOL_BLUETOOTH, BT_MODE, bytes([BT_MODE_EXT_FLOWCTL]))
                self.sock.setsockopt(SOL_BLUETOOTH, BT_RCVMTU, struct.pack('<H', BEARER_MTU))
            raw = bytearray(sockaddr_l2(address, 0))
            struct.pack_into('<H', raw, 2, psm)
            if call(self.sock.fileno(), bytes(raw), len(raw)) != 0:
                err = ctypes.get_errno()
                raise CheckFailed('ECRED %s %s: %s' % (call.__name__, address, os.strerror(err)))
        self.sock.settimeout(timeout)
        self.peer_requests = []

    def response(self):
        """The response to the request sent last (answering the peer's own requests meanwhile);
        an Error Response raises AttError."""
        while True:
            got = self.sock.recv(512)
            if got[0] in RESPONSES:
                if got[0] == ERROR:
                    raise AttError(*struct.unpack('<BHB', got[1:5]))
                return got
            self._peer(got)

    def request(self, pdu):
        self.sock.send(pdu)
        return self.response()


class Fixed(Att):
    """The ATT fixed channel, which makes the link."""

    def ccc(self, value_handle):
        """The Client Characteristic Configuration descriptor after a value handle (Find Information)."""
        rsp = self.request(struct.pack('<BHH', FIND_INFO_REQ, value_handle + 1, value_handle + 2))
        if rsp[1] == 1:  # 16-bit UUIDs: handle, UUID pairs
            for at in range(2, len(rsp), 4):
                handle, uuid = struct.unpack('<HH', rsp[at:at + 4])
                if uuid == CCC_UUID:
                    return handle
        raise CheckFailed('no CCC after handle 0x%04x: %s' % (value_handle, rsp.hex()))


def at_once(bearers, pdus):
    """Sends each bearer its request before reading any response, so that they are under way
    at once (one per bearer, as EATT allows); returns the responses in the same order."""
    for bearer, pdu in zip(bearers, pdus):
        bearer.sock.send(pdu)
    return [bearer.response() for bearer in bearers]


def read_at_once(bearers, handle, size, what):
    """Long reads of `handle` on every bearer, each step sent on all of them at once; the
    values must take several pieces (size bytes in all)."""
    values = [rsp[1:] for rsp in at_once(bearers, [struct.pack('<BH', READ_REQ, handle)] * len(bearers))]
    if not all(0 < len(v) < size for v in values):
        raise CheckFailed('%s: a %d-byte value should take several pieces: first pieces of %s bytes'
                          % (what, size, [len(v) for v in values]))
    while any(len(v) < size for v in values):
        going = [i for i, v in enumerate(values) if len(v) < size]
        pieces = at_once([bearers[i] for i in going],
                         [struct.pack('<BHH', BLOB_REQ, handle, len(values[i])) for i in going])
        for i, rsp in zip(going, pieces):
            if len(rsp) < 2:
                raise CheckFailed('%s, bearer %d: an empty piece at offset %d' % (what, i, len(values[i])))
            values[i] += rsp[1:]
    return values


def phase_raw(args):
    """Concurrent requests of one central on two EATT bearers: reads of one characteristic,
    long reads of a handler-served value (gattd's per-central long-read cache), long writes."""
    central = Central(args.adapter)
    central.power_on()
    central.forget(args.peer)
    fixed = Fixed(args.own, args.peer)
    handles = fixed.characteristics()
    names = {LONG: 'long', SERVED: 'served', CMD: 'cmd', CMD2: 'cmd2', REL1: 'rel1', REL2: 'rel2', TICK: 'tick',
             SIG: 'sig', IND: 'ind'}
    missing = [name for uuid, name in names.items() if uuid not in handles]
    if missing:
        raise CheckFailed('not found by Read By Type: %s' % missing)
    bearers = [Bearer(args.own, args.peer), Bearer(args.own, args.peer)]
    step('two EATT bearers open (LE ECRED, PSM 39, receive MTU %d) beside the ATT fixed channel' % BEARER_MTU)

    # One stored characteristic read on both bearers at once, piece by piece.
    for i, value in enumerate(read_at_once(bearers, handles[LONG], len(LONG_VALUE), 'long')):
        if value != LONG_VALUE:
            raise CheckFailed('long read on bearer %d: %r' % (i, value))
    step('long (300 bytes) read on both bearers at once, each piece too: the stored value on both')

    # A handler-served value: two long reads that start together and go on in turn are one
    # answer (the second joins the first: LongReadCache); the next round is a new answer.
    answers = []
    for round_ in range(1, 3):
        values = read_at_once(bearers, handles[SERVED], 200, 'served round %d' % round_)
        got = [one_value(v, 'served round %d, bearer %d' % (round_, i)) for i, v in enumerate(values)]
        if got[0] != got[1]:
            raise CheckFailed('two long reads of served under way at once got answers %s' % got)
        answers.append(got[0])
        step('round %d: two long reads of served at once on two bearers: one answer (%d)' % (round_, got[0]))
    if answers[0] == answers[1]:
        raise CheckFailed('the second round should be a new answer of the handler: %s' % answers)

    # Long writes on both bearers at once, Prepare Write pieces in turn. bluetoothd keeps one
    # prepare queue per central, which all its bearers share (docs/bluez-contract.md §13):
    # two long writes under way at once are two entries of one queue, which its Execute
    # Write takes as a reliable write. To characteristics without `reliable-write` it is
    # refused whole (0x06) and nothing reaches gattd; to two with it, both are written
    # whole by the first bearer's Execute Write, and the other's finds the queue empty.
    def long_writes(first, second):
        written = {first: bytes((n * 3 + 1) % 256 for n in range(150)),
                   second: bytes((n * 5 + 2) % 256 for n in range(150))}
        piece = BEARER_MTU - 5
        for at in range(0, 150, piece):
            pdus = [struct.pack('<BHH', PREP_REQ, handles[uuid], at) + written[uuid][at:at + piece]
                    for uuid in (first, second)]
            for pdu, rsp in zip(pdus, at_once(bearers, pdus)):
                if rsp[0] != PREP_RSP or rsp[1:] != pdu[1:]:
                    raise CheckFailed('Prepare Write Response does not echo the request: %s vs %s'
                                      % (rsp.hex(), pdu.hex()))
        return written

    def stored(uuid):
        """The value read on one bearer, piece by piece until a piece is empty or short."""
        value = bearers[1].request(struct.pack('<BH', READ_REQ, handles[uuid]))[1:]
        piece = value
        while len(piece) >= BEARER_MTU - 3 and len(value) < 300:
            piece = bearers[1].request(struct.pack('<BHH', BLOB_REQ, handles[uuid], len(value)))[1:]
            value += piece
        return value

    long_writes(CMD, CMD2)
    expect_att_error(lambda: bearers[0].request(struct.pack('<BB', EXEC_REQ, 1)), 0x06,
                     'Execute Write of long writes to cmd and cmd2 under way at once')
    if bearers[1].request(struct.pack('<BB', EXEC_REQ, 1))[0] != EXEC_RSP:
        raise CheckFailed('the second Execute Write (the queue dropped) is not a success')
    if stored(CMD) or stored(CMD2):
        raise CheckFailed('cmd or cmd2 written although the Execute Write was refused: %r %r'
                          % (stored(CMD), stored(CMD2)))
    step('long writes to cmd and cmd2 at once on two bearers (one prepare queue): refused whole (0x06), '
         'nothing written')
    written = long_writes(REL1, REL2)
    for bearer in bearers:
        if bearer.request(struct.pack('<BB', EXEC_REQ, 1))[0] != EXEC_RSP:
            raise CheckFailed('Execute Write of rel1 and rel2 failed')
    for uuid in (REL1, REL2):
        if stored(uuid) != written[uuid]:
            raise CheckFailed('%s after the long writes reads %s, wrote %s'
                              % (names[uuid], stored(uuid).hex(), written[uuid].hex()))
    step('150-byte long writes to rel1 and rel2 (reliable-write) at once on two bearers: both values whole')

    # Notifications (socket and signal path) and indications while the bearers are open:
    # bluetoothd sends each on whichever bearer is free, so they are gathered from all three.
    sockets = [fixed] + bearers
    for uuid in (TICK, SIG, IND):
        ccc = fixed.ccc(handles[uuid])
        fixed.request(struct.pack('<BHH', WRITE_REQ, ccc, 2 if uuid == IND else 1))
    step('subscribed to tick (socket), sig (signal) and ind (indications) over the ATT fixed channel')
    # Set by another thread while this one gathers (and confirms indications at once):
    # each characteristic has delivery "all", so every value is sent, none replaced.
    failed = []

    def set_values():
        try:
            for n in range(1, 4):
                gattctl(args, 'set', 'tick', '--uint16', str(n))
                gattctl(args, 'set', 'sig', '--uint16', str(10 + n))
                gattctl(args, 'set', 'ind', '--uint16', str(20 + n))
        except CheckFailed as e:
            failed.append(e)
    setter = threading.Thread(target=set_values)
    setter.start()
    wanted = {TICK: [1, 2, 3], SIG: [11, 12, 13], IND: [21, 22, 23]}
    by_handle = {handles[uuid]: uuid for uuid in wanted}
    arrived = {uuid: [] for uuid in wanted}
    on = {uuid: set() for uuid in wanted}
    deadline = time.monotonic() + bound(30)
    while any(len(arrived[u]) < 3 for u in wanted) and time.monotonic() < deadline:
        ready, _, _ = select.select([a.sock for a in sockets], [], [], max(0.0, deadline - time.monotonic()))
        for i, att in enumerate(sockets):
            if att.sock not in ready:
                continue
            pdu = att.sock.recv(512)
            if pdu[0] in (NOTIFY, INDICATE) and struct.unpack('<H', pdu[1:3])[0] in by_handle:
                uuid = by_handle[struct.unpack('<H', pdu[1:3])[0]]
                arrived[uuid].append(int.from_bytes(pdu[3:], 'little'))
                on[uuid].add(i)
            att._peer(pdu)  # confirms an indication on the bearer it came on
    setter.join()
    if failed:
        raise failed[0]
    names_of = {TICK: 'tick', SIG: 'sig', IND: 'ind'}
    step('arrived: %s (on bearers %s; 0 is the ATT fixed channel)'
         % ({names_of[u]: v for u, v in arrived.items()}, {names_of[u]: sorted(b) for u, b in on.items()}))
    for uuid, values in wanted.items():
        # Each value may go out on another bearer, and ATT orders only within one bearer.
        if sorted(arrived[uuid]) != values:
            raise CheckFailed('%s arrived as %s, expected %s, each once' % (names_of[uuid], arrived[uuid], values))
    step('notifications (socket and signal path) and indications all arrived, each once')
    for bearer in bearers:
        bearer.close()
    fixed.close()


def phase_handler(args):
    sys.path.insert(0, args.python)
    import gattd
    app = gattd.Peripheral()
    count = [0]

    @app.on_read('served')
    def served(request):
        count[0] += 1
        print('read served #%d offset %d mtu %s from %s' % (count[0], request.offset, request.mtu, request.address),
              flush=True)
        return b'%04d|' % count[0] * 40

    app.on_start(lambda: print('registered', flush=True))
    app.run()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('phase', choices=['central', 'raw', 'handler'])
    parser.add_argument('--adapter', default='hci1')
    parser.add_argument('--peer', default='00:AA:01:00:00:00')
    parser.add_argument('--own', default='00:AA:01:01:00:01', help="hci1's address (the raw central)")
    parser.add_argument('--gattctl')
    parser.add_argument('--bluetoothd-log')
    parser.add_argument('--python', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                                         'python'), help='where the gattd Python module is')
    args = parser.parse_args()
    if args.phase == 'handler':
        phase_handler(args)
        return
    if not args.gattctl:
        parser.error('%s needs --gattctl' % args.phase)
    if args.phase == 'raw':
        run(lambda: phase_raw(args))
        return
    if not args.bluetoothd_log:
        parser.error('central needs --bluetoothd-log')
    run(lambda: phase_central(args))


if __name__ == '__main__':
    main()
