#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""longwrite_att.py: prepared writes at ATT MTU 23, from a central that speaks ATT itself
(a kernel L2CAP socket on the LE ATT channel of hci1; bluetoothd's own client is not used,
so the central sends Prepare Write and Execute Write exactly as a phone would and never asks
for a larger MTU). Run by scenarios/gattd-longwrite.sh with configs/longwrite.json:

  1. 200 bytes in 18-byte Prepare Write pieces, then Execute Write, to `plain`, `decided`
     (deciding onWrite hook) and `handled` (handler program): stored whole (`gattctl get`;
     Read + Read Blob for plain and decided);
  2. 201 bytes in pieces (maxLength 200): every piece is acknowledged (bluetoothd does not
     ask gattd), the Execute Write gets Error Response 0x0D; nothing stored;
  3. 200 bytes prepared, then Execute Write with flags 0x00 (cancel): nothing stored;
  4. 200 bytes to `authed` (flag `authorize`, minLength 1): bluetoothd asks gattd first
     (`prepare-authorize`, no data), then writes them on Execute Write;
  5. a reliable write across `rela` and `relb` (both `reliable-write`) is stored; one that
     also names `plain` (no `reliable-write`) gets 0x06 and stores nothing; one whose second
     value is over relb's maxLength gets 0x0D and leaves the first one written (no rollback).

usage: longwrite_att.py --gattctl PATH --own ADDR --peer ADDR
"""
import argparse
import ctypes
import errno
import os
import socket
import struct
import subprocess
import sys
import uuid as uuidlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import CheckFailed, run, step  # noqa: E402
from longwrite import CHRCS, gattctl_get, pattern  # noqa: E402

AF_BLUETOOTH, BTPROTO_L2CAP, ATT_CID, BDADDR_LE_PUBLIC = 31, 0, 4, 1
MTU = 23
ERROR, MTU_REQ, MTU_RSP = 0x01, 0x02, 0x03
READ_BY_TYPE_REQ, READ_BY_TYPE_RSP, READ_REQ, READ_RSP, BLOB_REQ, BLOB_RSP = 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D
PREP_REQ, PREP_RSP, EXEC_REQ, EXEC_RSP = 0x16, 0x17, 0x18, 0x19
RESPONSES = {ERROR, MTU_RSP, 0x05, 0x07, READ_BY_TYPE_RSP, READ_RSP, BLOB_RSP, 0x0F, 0x11, 0x13, PREP_RSP, EXEC_RSP, 0x21}
RELIABLE = {'rela': '12345678-1234-5678-1234-56789abcd004', 'relb': '12345678-1234-5678-1234-56789abcd005'}
AUTHED = '12345678-1234-5678-1234-56789abcd006'


class AttError(Exception):
    def __init__(self, request, handle, code):
        super().__init__('ATT error 0x%02x for request 0x%02x on handle 0x%04x' % (code, request, handle))
        self.request, self.handle, self.code = request, handle, code


def sockaddr_l2(address, cid):
    """struct sockaddr_l2: family, psm, bdaddr (reversed), cid, bdaddr_type (14 bytes)."""
    return struct.pack('<HH6sHBx', AF_BLUETOOTH, 0, bytes.fromhex(address.replace(':', ''))[::-1], cid,
                       BDADDR_LE_PUBLIC)


class Att:
    """One ATT bearer; answers the peer's own requests (its GATT client) so that it goes on."""

    def __init__(self, own, peer, timeout=40):
        self.sock = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
        libc = ctypes.CDLL(None, use_errno=True)
        # Both ends name the ATT channel: the kernel takes an LE connect only for a socket bound to it.
        for call, address, cid in ((libc.bind, own, ATT_CID), (libc.connect, peer, ATT_CID)):
            raw = sockaddr_l2(address, cid)
            if call(self.sock.fileno(), raw, len(raw)) != 0:
                err = ctypes.get_errno()
                self.sock.close()
                message = '%s %s (ATT, CID %d): %s' % (call.__name__, address, cid, os.strerror(err))
                if call.__name__ == 'connect' and err == errno.EBUSY:
                    # The kernel allows one user of a fixed channel per link: a link to peer
                    # made by another socket (an L2CAP channel) got bluetoothd's ATT on it.
                    message += ('; a link to %s is up and another ATT user on this adapter (bluetoothd) '
                                'holds its fixed channel: drop the link first (Device1.Disconnect)' % peer)
                raise CheckFailed(message)
        self.sock.settimeout(timeout)  # after connect: a timeout makes the descriptor non-blocking
        self.peer_requests = []

    def close(self):
        self.sock.close()

    def request(self, pdu):
        """Sends a request, returns its response PDU; an Error Response raises AttError."""
        self.sock.send(pdu)
        while True:
            got = self.sock.recv(512)
            op = got[0]
            if op in RESPONSES:
                if op == ERROR:
                    req, handle, code = struct.unpack('<BHB', got[1:5])
                    raise AttError(req, handle, code)
                return got
            self._peer(got)

    def _peer(self, pdu):
        op = pdu[0]
        self.peer_requests.append(op)
        if op == MTU_REQ:
            self.sock.send(struct.pack('<BH', MTU_RSP, MTU))  # keeps the bearer at 23
        elif op == 0x1D:
            self.sock.send(b'\x1e')  # confirm an indication
        elif op & 0x40 or op == 0x1B:
            pass  # a command or a notification: no answer
        else:
            self.sock.send(struct.pack('<BBHB', ERROR, op, 0, 0x06))  # this central serves nothing

    def characteristics(self):
        """{uuid: value handle} of the peer's characteristics (Read By Type 0x2803)."""
        found, start = {}, 1
        while start <= 0xFFFF:
            try:
                rsp = self.request(struct.pack('<BHHH', READ_BY_TYPE_REQ, start, 0xFFFF, 0x2803))
            except AttError as e:
                if e.code == 0x0A:
                    return found
                raise
            size, last = rsp[1], start
            for i in range(2, len(rsp), size):
                entry = rsp[i:i + size]
                last, _, value_handle = struct.unpack('<HBH', entry[:5])
                raw = entry[5:]
                name = (str(uuidlib.UUID(bytes=raw[::-1])) if len(raw) == 16
                        else '0000%04x-0000-1000-8000-00805f9b34fb' % struct.unpack('<H', raw)[0])
                found[name] = value_handle
            start = last + 1
        return found

    def read_long(self, handle):
        value = self.request(struct.pack('<BH', READ_REQ, handle))[1:]
        while len(value) % (MTU - 1) == 0 and value:
            piece = self.request(struct.pack('<BHH', BLOB_REQ, handle, len(value)))[1:]
            if not piece:
                break
            value += piece
        return value

    def prepare(self, handle, value, offset=0):
        """Prepare Write pieces of MTU-5 bytes; each response must echo the request."""
        for at in range(0, len(value), MTU - 5):
            pdu = struct.pack('<BHH', PREP_REQ, handle, offset + at) + value[at:at + MTU - 5]
            rsp = self.request(pdu)
            if rsp[1:] != pdu[1:]:
                raise CheckFailed('Prepare Write Response does not echo the request: %s vs %s' % (rsp.hex(), pdu.hex()))
        return (len(value) + MTU - 6) // (MTU - 5)

    def execute(self, flags=1):
        self.request(struct.pack('<BB', EXEC_REQ, flags))


def expect_att_error(action, code, what):
    try:
        action()
    except AttError as e:
        if e.code != code:
            raise CheckFailed('%s: expected ATT error 0x%02x, got %s' % (what, code, e))
        return e
    raise CheckFailed('%s: expected ATT error 0x%02x, but it succeeded' % (what, code))


def plan(args):
    att = Att(args.own, args.peer)
    handles = att.characteristics()
    want = dict(CHRCS, authed=AUTHED, **RELIABLE)
    missing = [ident for ident, uuid in want.items() if uuid not in handles]
    if missing:
        raise CheckFailed('characteristics not found: %s (have %s)' % (missing, sorted(handles)))
    h = {ident: handles[uuid] for ident, uuid in want.items()}
    step('connected over a raw ATT channel at MTU %d; %d characteristics found' % (MTU, len(handles)))

    def check_stored(ident, value, what):
        got = gattctl_get(args.gattctl, ident)
        if got != value:
            raise CheckFailed('%s: gattctl get %s = %s..., expected %s... (%d bytes)'
                              % (what, ident, got[:8].hex(), value[:8].hex(), len(value)))
        if ident != 'handled':
            back = att.read_long(h[ident])
            if back != value:
                raise CheckFailed('%s: %s reads %s... (%d bytes), expected %s... (%d bytes)'
                                  % (what, ident, back[:8].hex(), len(back), value[:8].hex(), len(value)))

    stored = {}
    for n, ident in enumerate(CHRCS):
        value = pattern(MTU + n, 200)
        pieces = att.prepare(h[ident], value)
        att.execute()
        stored[ident] = value
        check_stored(ident, value, 'long write')
        step('%s: 200 bytes in %d Prepare Write pieces + Execute Write, stored whole' % (ident, pieces))

    # `authorize` (minLength 1): bluetoothd asks gattd with prepare-authorize and no data
    # before queueing the first piece; gattd must not hold that empty ask to minLength.
    value = pattern(MTU + 50, 200)
    att.prepare(h['authed'], value)
    att.execute()
    check_stored('authed', value, 'long write to an authorize characteristic')
    step('authed (authorize, minLength 1): 200 bytes stored (the prepare-authorize ask was accepted)')

    for ident in CHRCS:
        att.prepare(h[ident], pattern(MTU + 30, 201))
        expect_att_error(att.execute, 0x0D, '201 bytes to %s' % ident)
        check_stored(ident, stored[ident], 'after the refused 201 bytes')
    step('201 bytes (over maxLength): every piece acknowledged, Execute Write -> 0x0D, nothing stored')

    for ident in CHRCS:
        att.prepare(h[ident], pattern(MTU + 40, 200))
        att.execute(flags=0)
        check_stored(ident, stored[ident], 'after a cancelled long write')
    step('200 bytes prepared, Execute Write with flags 0x00 (cancel): nothing stored')

    att.prepare(h['rela'], b'reliable one')
    att.prepare(h['relb'], b'reliable two')
    att.execute()
    check_stored('rela', b'reliable one', 'reliable write')
    check_stored('relb', b'reliable two', 'reliable write')
    step('reliable write across rela and relb: both stored')

    att.prepare(h['rela'], b'not this')
    att.prepare(h['plain'], b'nor this')
    e = expect_att_error(att.execute, 0x06, 'reliable write naming plain (no reliable-write)')
    if e.handle != h['plain']:
        raise CheckFailed('the 0x06 names handle 0x%04x, expected plain\'s 0x%04x' % (e.handle, h['plain']))
    check_stored('rela', b'reliable one', 'after the refused reliable write')
    check_stored('plain', stored['plain'], 'after the refused reliable write')
    step('reliable write naming plain (no reliable-write): 0x06 on plain\'s handle, nothing stored')

    att.prepare(h['rela'], b'first goes in')
    att.prepare(h['relb'], b'x' * 21)
    e = expect_att_error(att.execute, 0x0D, 'reliable write with 21 bytes for relb (maxLength 20)')
    check_stored('rela', b'first goes in', 'the first entry of a failed reliable write')
    check_stored('relb', b'reliable two', 'the refused entry of a reliable write')
    step('reliable write whose second value is too long: 0x0D on handle 0x%04x; the first entry stays '
         'written (bluetoothd executes entry by entry, no rollback)' % e.handle)
    att.close()
    step('closed; the peer sent this central ATT requests %s (answered: MTU %d, else 0x06)'
         % (sorted({'0x%02x' % op for op in att.peer_requests}), MTU))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--own', required=True, help='the central adapter\'s address (hci1)')
    parser.add_argument('--peer', required=True)
    parser.add_argument('--gattctl', required=True)
    args = parser.parse_args()

    def checked():
        try:
            plan(args)
        except AttError as e:
            raise CheckFailed('unexpected %s' % e) from e
        except OSError as e:  # a timeout or a dropped link
            raise CheckFailed('ATT channel: %s' % e) from e
    run(checked)


if __name__ == '__main__':
    main()
