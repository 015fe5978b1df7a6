# SPDX-License-Identifier: MIT
"""gattd-bumble's central: Google's Bumble on its own host stack, not BlueZ.

Runs under the venv Tests/vm/prepare-bumble makes, on the HCI user channel of hci1 (the
scenario has taken hci1 away from bluetoothd first). Every expectation comes from the
gattd configuration (--config). One process, two phases, so that the controller and the
bond stay in Bumble's hands throughout:

1. scan for gattd's advertisement, connect, exchange MTU 247, read an encrypt-read
   characteristic unencrypted (refused), pair just-works with bonding, discover the whole
   tree and compare it with the config, read every readable value, write a value longer
   than MTU-3 (Prepare Write pieces + Execute Write) and read it back, subscribe to the
   counter and receive consecutive notifications, unsubscribe, disconnect; print
   "phase 1 done" and wait for a line on stdin (the scenario restarts gattd meanwhile);
2. reconnect, wait for the peripheral's SMP Security Request, encrypt with the bond's key
   (no new pairing), and read every readable characteristic by the handle discovered in
   phase 1, without any discovery: each must give that characteristic's own value.

Every wait has a timeout; a failed check ends the program with "FAIL: expected ..., got ...".
"""
import argparse
import asyncio
import json
import logging
import subprocess
import sys
import time

STARTED = time.monotonic()  # before Bumble's imports, which take seconds under TCG

from bumble import hci
from bumble.att import ATT_Error
from bumble.core import AdvertisingData, PhysicalTransport
from bumble.device import Device, Peer
from bumble.gatt import GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

MTU = 247
NOTIFICATIONS = 5


class CheckFailed(Exception):
    """A check did not hold; the message says what was expected and what came."""


def step(text):
    print(f'{text} ({time.monotonic() - STARTED:.1f} s)', flush=True)


def expected_value(value):
    """The bytes a config `value` object stands for (the kinds bumble.json uses)."""
    if 'utf8' in value:
        return value['utf8'].encode()
    if 'hex' in value:
        return bytes.fromhex(value['hex'])
    if 'uint8' in value:
        return bytes([value['uint8']])
    raise CheckFailed(f'bumble_central.py does not know the value kind of {value}')


def full_uuid(text):
    return text.lower()


async def bounded(awaitable, seconds, what):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise CheckFailed(f'expected {what} within {seconds} s, got nothing') from None


def att_name(error):
    return f'ATT error 0x{error.error_code:02x}'


class Central:
    def __init__(self, args, config):
        self.args = args
        self.config = config
        self.device = None
        self.peer_address = None
        self.handles = {}  # characteristic id -> value handle (phase 1)
        self.written = None

    def characteristics(self):
        for service in self.config['services']:
            for chrc in service.get('characteristics', []):
                yield service, chrc

    async def find_gattd(self):
        name = self.config['advertisements'][0]['localName']
        want = hci.Address(self.args.peer, hci.Address.PUBLIC_DEVICE_ADDRESS)
        found = asyncio.get_running_loop().create_future()

        def on_advertisement(advertisement):
            if bytes(advertisement.address) != bytes(want) or found.done():
                return
            local = advertisement.data.get(AdvertisingData.Type.COMPLETE_LOCAL_NAME)
            if local is not None and not isinstance(local, str):
                local = bytes(local).decode(errors='replace')
            if local == name and advertisement.is_connectable:
                found.set_result(advertisement)

        self.device.on('advertisement', on_advertisement)
        await self.device.start_scanning(filter_duplicates=False)
        try:
            advertisement = await bounded(found, 30, f'a connectable advertisement named {name!r} from {want}')
        finally:
            self.device.remove_listener('advertisement', on_advertisement)
            await self.device.stop_scanning()
        self.peer_address = advertisement.address
        step(f'scan: {advertisement.address} advertises {name!r} (RSSI {advertisement.rssi})')

    async def connect(self):
        security_requests = asyncio.Queue()

        def on_connection(connection):
            # Attached as the connection is made, so that no Security Request is missed.
            connection.on('security_request', security_requests.put_nowait)

        self.device.on('connection', on_connection)
        try:
            connection = await bounded(
                self.device.connect(self.peer_address, transport=PhysicalTransport.LE,
                                    own_address_type=hci.OwnAddressType.PUBLIC, timeout=None),
                30, f'a connection to {self.peer_address}')
        finally:
            self.device.remove_listener('connection', on_connection)
        connection.security_requests = security_requests
        disconnected = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
        connection.disconnected = disconnected
        step(f'connected to {self.peer_address} as {self.device.public_address} (handle {connection.handle})')
        return connection

    async def disconnect(self, connection):
        await connection.disconnect()
        await bounded(connection.disconnected, 10, 'the disconnection event')

    async def phase1(self):
        await self.find_gattd()
        connection = await self.connect()
        peer = Peer(connection)
        mtu = await bounded(peer.request_mtu(MTU), 10, 'the Exchange MTU response')
        if mtu != MTU:
            raise CheckFailed(f'expected ATT MTU {MTU} after the exchange, got {mtu}')
        step(f'MTU exchanged: {mtu}')

        await bounded(peer.discover_services(), 20, 'primary service discovery')
        await bounded(peer.discover_characteristics(), 20, 'characteristic discovery')
        self.check_tree(peer)

        secret = self.find('encrypt-read')
        try:
            got = await bounded(peer.read_value(self.proxies[secret['id']]), 10, f'the read of {secret["id"]}')
            raise CheckFailed(f'expected {secret["id"]} (encrypt-read) refused before pairing, got {got!r}')
        except ATT_Error as error:
            if error.error_code not in (0x05, 0x0F):
                raise CheckFailed(f'expected ATT error 0x0f (or 0x05) reading {secret["id"]} unencrypted, got {att_name(error)}') from None
            step(f'{secret["id"]} before pairing: refused with {att_name(error)}')

        paired = asyncio.get_running_loop().create_future()
        connection.on('pairing', lambda keys: paired.done() or paired.set_result(keys))
        connection.on('pairing_failure', lambda reason: paired.done() or paired.set_exception(
            CheckFailed(f'expected just-works pairing to succeed, got pairing failure {reason!r}')))
        await bounded(connection.pair(), 30, 'pairing to complete')
        keys = await bounded(paired, 10, 'the pairing event with keys')
        if not connection.is_encrypted:
            raise CheckFailed('expected the link encrypted after pairing, got an unencrypted link')
        stored = await self.device.keystore.get(str(connection.peer_address))
        if stored is None or stored.ltk is None and stored.ltk_central is None:
            raise CheckFailed(f'expected a long-term key stored for {connection.peer_address} (bonding), got {stored}')
        step(f'paired just-works and bonded (encrypted, LTK kept; identity {keys.irk is not None and "with IRK" or "public"})')

        for _, chrc in self.characteristics():
            if not self.readable(chrc):
                continue
            got = await bounded(peer.read_value(self.proxies[chrc['id']]), 10, f'the read of {chrc["id"]}')
            self.check_value(chrc, got, 'read')

        blob = self.find_writable()
        value = bytes((i * 7 + 3) % 256 for i in range(self.args.long))
        if len(value) <= MTU - 3:
            raise CheckFailed(f'--long {self.args.long} is not longer than MTU-3 ({MTU - 3})')
        await bounded(peer.write_value(self.proxies[blob['id']], value, with_response=True), 30,
                      f'the long write of {len(value)} bytes to {blob["id"]}')
        got = await bounded(peer.read_value(self.proxies[blob['id']]), 20, f'the long read of {blob["id"]}')
        if got != value:
            raise CheckFailed(f'expected {blob["id"]} to read back the {len(value)} bytes written, got {len(got)} bytes {got[:16].hex()}...')
        if self.args.gattctl:
            shown = subprocess.run([self.args.gattctl, 'get', blob['id'], '--json'], capture_output=True, text=True, timeout=20)
            try:
                hex_value = json.loads(shown.stdout)['hex'].lower()
            except (ValueError, KeyError, TypeError):
                hex_value = None
            if shown.returncode != 0 or hex_value != value.hex():
                raise CheckFailed(f'expected gattctl get {blob["id"]} --json to show the {len(value)} bytes, got exit {shown.returncode} {shown.stdout[:60]!r} {shown.stderr.strip()!r}')
        self.written = value
        step(f'long write: {len(value)} bytes to {blob["id"]} (> MTU-3 = {MTU - 3}: Prepare Write + Execute Write) read back whole'
             + (' and in gattctl get' if self.args.gattctl else ''))

        ticks = self.find('notify')
        proxy = self.proxies[ticks['id']]
        received = asyncio.Queue()
        await bounded(peer.discover_descriptors(proxy), 10, f'descriptor discovery of {ticks["id"]}')
        if proxy.get_descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR) is None:
            raise CheckFailed(f'expected a CCC descriptor on {ticks["id"]}, got none')
        await bounded(peer.subscribe(proxy, received.put_nowait), 10, f'the CCC write to {ticks["id"]}')
        values = []
        for _ in range(NOTIFICATIONS):
            values.append(bytes(await bounded(received.get(), 10, f'a notification of {ticks["id"]}')))
        numbers = [v[0] for v in values]
        if any(len(v) != 1 for v in values) or any((b - a) % 256 != 1 for a, b in zip(numbers, numbers[1:])):
            raise CheckFailed(f'expected {NOTIFICATIONS} consecutive one-byte counter values, got {[v.hex() for v in values]}')
        await bounded(peer.unsubscribe(proxy), 10, f'the CCC write that unsubscribes {ticks["id"]}')
        step(f'notifications of {ticks["id"]}: {numbers}')

        self.handles = {cid: p.handle for cid, p in self.proxies.items()}
        await self.disconnect(connection)
        step('handles: ' + ' '.join(f'{cid}=0x{h:04x}' for cid, h in self.handles.items()))
        print('phase 1 done', flush=True)

    async def phase2(self):
        connection = await self.connect()
        paired = []
        connection.on('pairing', lambda keys: paired.append(keys))
        # As Android does, encrypt when the peripheral asks (SMP Security Request). bluetoothd
        # asks as it attaches ATT to a bonded central's link; a central that encrypts before
        # that (as Bumble's encrypt() right after connecting would) makes the kernel refuse
        # bluetoothd's BT_SECURITY request as already met, and bluetoothd then drops ATT and
        # the link (5.66 and 5.82 on Linux 6.1; docs/bluez-contract.md, "A bonded central
        # that encrypts first").
        await bounded(connection.security_requests.get(), 20, "the peripheral's Security Request")
        step("the peripheral asked for security (SMP Security Request)")
        await bounded(connection.encrypt(), 20, 'encryption with the bonded key')
        if not connection.is_encrypted:
            raise CheckFailed('expected the link encrypted with the bond, got an unencrypted link')
        step('encrypted with the bond from phase 1')
        client = connection.gatt_client
        if client.services:
            raise CheckFailed(f'expected no discovered services on the new connection, got {len(client.services)}')
        wrong = []
        for _, chrc in self.characteristics():
            if not self.readable(chrc):
                continue
            handle = self.handles[chrc['id']]
            try:
                got = await bounded(client.read_value(handle), 20, f'the read of handle 0x{handle:04x} ({chrc["id"]})')
            except ATT_Error as error:
                wrong.append(f'{chrc["id"]} at 0x{handle:04x}: expected its value, got {att_name(error)}')
                continue
            try:
                self.check_value(chrc, got, f'read by cached handle 0x{handle:04x}')
            except CheckFailed as failure:
                wrong.append(str(failure))
        if paired:
            raise CheckFailed('expected no new pairing on reconnection, got a pairing')
        await self.disconnect(connection)
        if wrong:
            raise CheckFailed('reads by the handles discovered before gattd restarted:\n  ' + '\n  '.join(wrong))
        step('phase 2: every characteristic read its own value by its cached handle, no rediscovery')

    def readable(self, chrc):
        return any(f in chrc['flags'] for f in ('read', 'encrypt-read', 'encrypt-authenticated-read', 'secure-read'))

    def find(self, flag):
        for _, chrc in self.characteristics():
            if flag in chrc['flags']:
                return chrc
        raise CheckFailed(f'expected a characteristic with flag {flag} in the config, found none')

    def find_writable(self):
        for _, chrc in self.characteristics():
            if any(f in chrc['flags'] for f in ('write', 'encrypt-write')) and chrc.get('maxLength', 0) > MTU - 3:
                return chrc
        raise CheckFailed(f'expected a writable characteristic with maxLength > {MTU - 3} in the config, found none')

    def check_value(self, chrc, got, how):
        if chrc['id'] == self.find_writable()['id'] and self.written is not None:
            want = self.written
        elif 'update' in chrc:
            if len(got) != 1:
                raise CheckFailed(f'{how} of {chrc["id"]}: expected a one-byte counter, got {got.hex()}')
            step(f'{how} {chrc["id"]}: counter {got[0]}')
            return
        else:
            want = expected_value(chrc['value'])
        if got != want:
            raise CheckFailed(f'{how} of {chrc["id"]}: expected {want[:40]!r} ({len(want)} bytes), got {got[:40]!r} ({len(got)} bytes)')
        step(f'{how} {chrc["id"]}: {len(got)} bytes as configured' if self.written is None or want is not self.written
             else f'{how} {chrc["id"]}: the {len(got)} bytes written')

    def check_tree(self, peer):
        want = {full_uuid(s['uuid']): [full_uuid(c['uuid']) for c in s.get('characteristics', [])]
                for s in self.config['services']}
        self.proxies = {}
        ids = {full_uuid(c['uuid']): c['id'] for _, c in self.characteristics()}
        got = {}
        for service in peer.services:
            uuid = service.uuid.to_hex_str('-').lower()
            if uuid in want:
                got[uuid] = [c.uuid.to_hex_str('-').lower() for c in service.characteristics]
                for c in service.characteristics:
                    self.proxies[ids[c.uuid.to_hex_str('-').lower()]] = c
        if got != want:
            raise CheckFailed(f'expected the services and characteristics {want}, discovered {got}')
        step(f'discovered {len(got)} services with {sum(len(v) for v in got.values())} characteristics as configured')


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--transport', required=True, help='Bumble transport, e.g. hci-socket:1')
    parser.add_argument('--peer', required=True, help="gattd's adapter address")
    parser.add_argument('--config', required=True, help="gattd's configuration")
    parser.add_argument('--gattctl', help='check the long write with gattctl get too')
    parser.add_argument('--long', type=int, default=400, help='bytes of the long write (> MTU-3)')
    parser.add_argument('--debug-log', help="Bumble's own debug log (HCI, L2CAP, SMP, ATT) into this file")
    args = parser.parse_args()
    if args.debug_log:
        handler = logging.FileHandler(args.debug_log)
        handler.setFormatter(logging.Formatter('%(relativeCreated)9.1f %(name)s %(message)s'))
        bumble_logger = logging.getLogger('bumble')
        bumble_logger.addHandler(handler)
        bumble_logger.setLevel(logging.DEBUG)
        bumble_logger.propagate = False
    with open(args.config) as f:
        config = json.load(f)
    central = Central(args, config)
    step(f'Bumble imported; opening {args.transport}')
    async with await bounded(open_transport(args.transport), 20, f'the transport {args.transport}') as transport:
        device = Device.with_hci('gattd-bumble-central', hci.Address('F0:F1:F2:F3:F4:F5'),
                                 transport.source, transport.sink)
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=True, mitm=False, bonding=True,
            delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT),
            identity_address_type=PairingConfig.AddressType.PUBLIC)
        central.device = device
        await bounded(device.power_on(), 30, 'the controller to power on')
        step(f'Bumble is up on {args.transport}: public address {device.public_address}')
        await central.phase1()
        line = await bounded(asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline), 180,
                             'the scenario to say go on stdin')
        if line.strip() != 'go':
            raise CheckFailed(f'expected "go" on stdin, got {line!r}')
        await central.phase2()


if __name__ == '__main__':
    try:
        asyncio.run(main())
    except CheckFailed as failure:
        print(f'FAIL: {failure}', flush=True)
        sys.exit(1)
