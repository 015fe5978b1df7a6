# SPDX-License-Identifier: MIT
"""gattd-bumble's central: Google's Bumble on its own host stack, not BlueZ, with LE privacy.

Runs under the venv Tests/vm/prepare-bumble makes, on the HCI user channel of hci1 (the
scenario has taken hci1 away from bluetoothd first). Every expectation comes from the
gattd configuration (--config); gattd's events come from `gattctl watch --json` (--watch,
started by the scenario). Bumble uses LE privacy as a phone does: an IRK of its own
(--irk), connections from resolvable private addresses (RPAs) made from it, and its
identity (hci1's public address and the IRK) given when it bonds. One process, so that
the controller and the bond stay in Bumble's hands throughout (the scenario reloads gattd
between phases 1 and 2, restarts it between 2 and 3 and its bluetoothd between 4 and 5):

1. scan for gattd's advertisement, open gattd's pairing window (`gattctl pairing open`, the
   person pressing the button: the definition has bondedOnly), connect from an RPA (the
   `connected` event names it, type random), exchange MTU 247, discover the whole tree and
   compare it with the config (the PSM characteristic of the channel included), read the
   encrypt-read characteristic and the channel's PSM characteristic unencrypted (refused),
   pair just-works with bonding, the IRK distributed: the `address-changed` event names the
   RPA and the identity, `gattctl centrals` the identity; subscribe to Service Changed
   (indications) and read the Database Hash, as a caching phone does; close the pairing window; read
   every readable value, write a value longer than MTU-3 (Prepare Write pieces + Execute
   Write), read it back, and check the `written` events name the identity; subscribe to the
   counter and receive consecutive notifications, unsubscribe; read the PSM, open the LE
   credit-based channel on it and echo --channel-bytes each way through the program gattd
   relays (cat), in order, nothing lost or doubled, then close it: gattd logs the channel
   opened for the identity and closed by the central with the bytes each way; disconnect
   (the `disconnected` event names the identity); print "phase 1 done" and wait for a line
   on stdin (the scenario reloads gattd meanwhile with --moved-config, `first` removed);
2. from a new RPA, pairing closed: announced as the identity, encrypt when asked, read the
   Database Hash: it differs from phase 1's (whether a Service Changed came is printed, not
   asserted: bluetoothd's choice, docs/bluez-contract.md §12); discover again (the tree of --moved-config), the handles after
   `first` moved, and each readable characteristic read by its new handle gives its own
   value; gattd logs "returned after the GATT table changed while it was away" with the
   identity; disconnect; print "phase 2 done" and wait for a line on stdin (the scenario
   restarts gattd with the same (moved) definition meanwhile, and waits until its pairing
   window, open for a second at its start, is closed);
3. from a NEW RPA, with pairing closed and bondedOnly: reconnect (the `connected` event names
   the identity), wait for the peripheral's SMP Security Request, encrypt with the bond's
   key (no new pairing), and read every readable characteristic by the handle discovered in
   phase 2, without any discovery: each must give that characteristic's own value (the
   encrypt-read one and the PSM included); gattd keeps the link. Then targeted values: the
   pairing window opens, a second central (--other-transport, public address, not bonded)
   connects, both subscribe to `reply` (acquireNotify) by the cached handles; `gattctl set
   reply --to IDENTITY` reaches this central and not the other (--targeted: 5.79 and
   later) or is refused as untargetable (5.66), and a value for all reaches both; the other
   leaves, this central disconnects;
4. the phone is reset: Bumble forgets its keys, takes a new IRK (--new-irk), connects from an
   RPA of it (a new object on gattd's side) and pairs again in the open window: the
   `address-changed` event names the identity, `gattctl bonds` and `centrals` list it once,
   gattd logs "central paired again (new IRK)" with the new object, the encrypt-read value
   reads over the new keys; disconnect, the window closed; print "phase 4 done" and wait for
   a line on stdin (the scenario restarts gattd's bluetoothd meanwhile);
5. from a new RPA of the new IRK, pairing closed: announced as the identity on
   .../dev_<identity> (bluetoothd loaded the bond from storage), one bond, encryption with
   the newer bond when asked (no new pairing), the encrypted values (and `reply`'s last
   value for all) read by cached handles; disconnect;
6. another phone: Bumble forgets its keys again and connects from an RPA of a third IRK
   (--stranger-irk) that never bonded (its identity is never given): gattd (bondedOnly,
   pairing closed) drops it, logging "disconnecting a central that is not bonded" with
   that RPA, and the `disconnected` event names it.

Throughout, a program that knows centrals only from the watch's events never meets an
address it was not told about. Every wait has a timeout; a failed check ends the program
with "FAIL: expected ..., got ...".
"""
import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import sys
import time

STARTED = time.monotonic()  # before Bumble's imports, which take seconds under TCG

from bumble import hci
from bumble.att import ATT_Error
from bumble.core import AdvertisingData, ConnectionError as BumbleConnectionError, PhysicalTransport
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.gatt import (GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, GATT_DATABASE_HASH_CHARACTERISTIC,
                         GATT_GENERIC_ATTRIBUTE_SERVICE, GATT_SERVICE_CHANGED_CHARACTERISTIC)
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

from watchevents import read_events, unannounced

MTU = 247
NOTIFICATIONS = 5
# Apple's L2CAP PSM characteristic, which gattd adds to the service a channel names.
PSM_UUID = 'abdd3056-28fa-441d-a470-55a75a52553a'
# Bumble's receive MTU on the channel: gattd sends each SDU its program writes as one SDU of
# at most this (GATTD_SEND_MTU), so the central's SDUs, echoed whole by cat, stay within it.
CHANNEL_MTU = 2048
# At most this many bytes sent and not yet echoed: the guest's 6.1 kernel grants credits for
# more than a receive buffer holds and then hands SDUs out of order (docs/channels.md).
CHANNEL_WINDOW = 64 * 1024
# gattctl and gattd under qemu-user take SLOW times as long (run-suite --slow).
SLOW = int(os.environ.get('GATTD_VM_SLOW', '1'))


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
    if 'uint16' in value:
        return value['uint16'].to_bytes(2, 'little')
    raise CheckFailed(f'bumble_central.py does not know the value kind of {value}')


def full_uuid(text):
    return text.lower()


def text(address):
    """An address as gattd and bluetoothd write it (upper case, no type suffix)."""
    return address.to_string(False).upper()


async def bounded(awaitable, seconds, what):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        raise CheckFailed(f'expected {what} within {seconds} s, got nothing') from None


def att_name(error):
    return f'ATT error 0x{error.error_code:02x}'


async def until(check, seconds, what):
    """Polls `check` (a file another process writes) every 0.1 s until it returns
    something; fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise CheckFailed(f'expected {what} within {seconds} s, got nothing')
        await asyncio.sleep(0.1)


class Watch:
    """gattd's events, as the scenario's `gattctl watch --json` writes them (--watch): what
    a program that tracks centrals sees."""

    def __init__(self, path):
        self.path = path

    def events(self):
        return read_events(self.path)

    async def wait(self, what, after, **fields):
        """The first event after the first `after` with these fields."""
        def seen():
            return next((e for e in self.events()[after:] if all(e.get(k) == v for k, v in fields.items())), None)
        try:
            return await until(seen, 20 * SLOW, what)
        except CheckFailed as failure:
            raise CheckFailed(f'{failure}; the events since: {self.events()[after:]}') from None

    def check_tracking(self):
        """A program that knows centrals only from the events: every address an event names
        was announced (connected, or address-changed) before."""
        events = self.events()
        wrong = unannounced(events)
        if wrong:
            raise CheckFailed('expected %s, got %s' % wrong)
        step(f'a program following the events met only addresses it was told ({len(events)} events)')


def log_fields(line):
    """The key=value metadata of a gattd log line."""
    return dict(re.findall(r'(\S+)=(\S+)', line))


class Central:
    def __init__(self, args, config):
        self.args = args
        self.config = config
        self.watch = Watch(args.watch)
        self.device = None
        self.peer_address = None
        self.identity = None
        self.device_path = None  # bluetoothd's object for this central, from gattd's events
        self.handles = {}  # characteristic id -> value handle (phase 1; discovered again in phase 2)
        self.written = None
        self.psm = None
        self.key_name = None  # Bumble's keystore entry for gattd (its bond)
        self.reply_ccc = None  # the CCC handle of `reply` (phase 1, again in phase 2)
        self.reply_value = None  # `reply`'s value as gattd holds it, from phase 3 on
        self.closed_at = None  # the watch's events when the window closed after the re-pair
        self.stack = None  # closes the second central's transport at the end
        self.database_hash = None  # the Database Hash read before leaving (phase 1)
        self.service_changed = None  # the value handle of Service Changed, subscribed in phase 1

    def characteristics(self):
        """The config's characteristics, and per channel the PSM characteristic gattd adds
        at the end of its service, readable at the channel's level."""
        level = {'none': 'read', 'encrypt': 'encrypt-read', 'authenticate': 'encrypt-authenticated-read',
                 'secure': 'secure-read'}
        for service in self.config['services']:
            for chrc in service.get('characteristics', []):
                yield service, chrc
            for channel in self.config.get('channels', []):
                if channel['service'] == service['id']:
                    yield service, {'id': f'{service["id"]}.l2cap-psm', 'uuid': PSM_UUID, 'channel': channel['id'],
                                    'flags': [level[channel.get('security', 'none')]]}

    async def gattctl(self, *words):
        """Runs gattctl without blocking Bumble's loop; fails unless it exits 0."""
        process = await asyncio.create_subprocess_exec(self.args.gattctl, *words, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await bounded(process.communicate(), 30 * SLOW, f'gattctl {" ".join(words)} to exit')
        except CheckFailed:
            process.kill()
            raise
        if process.returncode != 0:
            raise CheckFailed(f'expected gattctl {" ".join(words)} to exit 0, got {process.returncode}: '
                              f'{(out + err).decode(errors="replace").strip()}')
        return out.decode()

    def gattd_log(self):
        with open(self.args.gattd_log, errors='replace') as f:
            return f.read().splitlines()

    async def find_gattd(self, device=None):
        """Scans (from `device`, Bumble's own by default) until gattd advertises connectably."""
        device = device or self.device
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

        device.on('advertisement', on_advertisement)
        await device.start_scanning(filter_duplicates=False)
        try:
            advertisement = await bounded(found, 30, f'a connectable advertisement named {name!r} from {want}')
        finally:
            device.remove_listener('advertisement', on_advertisement)
            await device.stop_scanning()
        self.peer_address = advertisement.address
        step(f'scan: {advertisement.address} advertises {name!r} (RSSI {advertisement.rssi})')

    async def connect(self):
        """Connects from the controller's random address: the RPA Bumble set."""
        rpa = self.device.random_address
        if not rpa.is_resolvable:
            raise CheckFailed(f'expected Bumble to have a resolvable private address, got {rpa}')
        security_requests = asyncio.Queue()

        def on_connection(connection):
            # Attached as the connection is made, so that no Security Request (or Service
            # Changed indication) is missed.
            connection.on('security_request', security_requests.put_nowait)
            connection.service_changed = []
            if self.service_changed is not None:
                connection.gatt_client.indication_subscribers.setdefault(self.service_changed, set()).add(
                    lambda value: connection.service_changed.append(bytes(value)))

        self.device.on('connection', on_connection)
        try:
            connection = await bounded(
                self.device.connect(self.peer_address, transport=PhysicalTransport.LE,
                                    own_address_type=hci.OwnAddressType.RANDOM, timeout=None),
                30, f'a connection to {self.peer_address}')
        finally:
            self.device.remove_listener('connection', on_connection)
        connection.security_requests = security_requests
        disconnected = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
        connection.disconnected = disconnected
        step(f'connected to {self.peer_address} from RPA {text(rpa)} (handle {connection.handle})')
        return connection

    async def pair(self, connection):
        """Just-works pairing with bonding; Bumble gives its identity and its IRK."""
        paired = asyncio.get_running_loop().create_future()
        connection.on('pairing', lambda keys: paired.done() or paired.set_result(keys))
        connection.on('pairing_failure', lambda reason: paired.done() or paired.set_exception(
            CheckFailed(f'expected just-works pairing to succeed, got pairing failure {reason!r}')))
        await bounded(connection.pair(), 30, 'pairing to complete')
        await bounded(paired, 10, 'the pairing event with keys')
        if not connection.is_encrypted:
            raise CheckFailed('expected the link encrypted after pairing, got an unencrypted link')
        self.key_name = str(connection.peer_address)
        stored = await self.device.keystore.get(self.key_name)
        if stored is None or stored.ltk is None and stored.ltk_central is None:
            raise CheckFailed(f'expected a long-term key stored for {connection.peer_address} (bonding), got {stored}')

    async def new_rpa(self, irk=None):
        """A new RPA (from `irk`, which becomes Bumble's IRK, when given), as a phone's
        changes every few minutes. Set here rather than with Device.update_rpa(), which in
        0.0.236 gives the controller the address it had."""
        old = text(self.device.random_address)
        if irk is not None:
            self.device.irk = irk
        new = hci.Address.generate_private_address(self.device.irk)
        await self.device.send_sync_command(hci.HCI_LE_Set_Random_Address_Command(random_address=new))
        self.device.random_address = new
        if text(new) == old:
            raise CheckFailed(f'expected a new RPA, got the old {old} again')
        return old, text(new)

    async def forget(self):
        """The phone is reset: it forgets its bond with gattd."""
        await self.device.keystore.delete(self.key_name)
        if await self.device.keystore.get(self.key_name) is not None:
            raise CheckFailed(f'expected Bumble to have forgotten its keys for {self.key_name}, got them still')

    async def disconnect(self, connection):
        await connection.disconnect()
        await bounded(connection.disconnected, 10, 'the disconnection event')

    async def disconnect_named_by_identity(self, connection):
        """Disconnects; the disconnected event must name the identity, and a program
        following the events must have met only addresses it was told."""
        leaving = len(self.watch.events())
        await self.disconnect(connection)
        gone = await self.watch.wait('the disconnected event', leaving, event='disconnected')
        if gone['address'] != self.identity:
            raise CheckFailed(f'expected the disconnected event to name {self.identity}, got {gone}')
        step(f'disconnected; the event names {self.identity}')
        self.watch.check_tracking()

    async def pairing_window_closed(self, after):
        """Waits for the window `gattctl pairing open 1` (after event `after`) to close."""
        await self.watch.wait('pairing opened for 1 s', after, event='pairing', state='open', seconds='1')
        events = self.watch.events()
        opened = next(i for i, e in enumerate(events) if i >= after and
                      (e.get('event'), e.get('state'), e.get('seconds')) == ('pairing', 'open', '1'))
        await self.watch.wait('the pairing window to close', opened + 1, event='pairing', state='closed')

    async def phase1(self):
        await self.find_gattd()
        mark = len(self.watch.events())
        # bondedOnly: a central without a bond may stay only while pairing is open; a phone's
        # first contact comes while a person has opened it.
        await self.gattctl('pairing', 'open', str(60 * SLOW))
        connection = await self.connect()
        rpa = text(self.device.random_address)
        first = await self.watch.wait('the connected event', mark, event='connected')
        if (first['address'], first.get('address-type')) != (rpa, 'random'):
            raise CheckFailed(f'expected the connected event to name RPA {rpa} (random), got {first}')
        self.device_path = first['device']
        step(f'first contact from RPA {rpa}: gattd announced it (random, {self.device_path})')
        peer = Peer(connection)
        mtu = await bounded(peer.request_mtu(MTU), 10, 'the Exchange MTU response')
        if mtu != MTU:
            raise CheckFailed(f'expected ATT MTU {MTU} after the exchange, got {mtu}')
        step(f'MTU exchanged: {mtu}')

        await bounded(peer.discover_services(), 20, 'primary service discovery')
        await bounded(peer.discover_characteristics(), 20, 'characteristic discovery')
        self.check_tree(peer)

        # The encrypt-read value, and the PSM of the `encrypt` channel: the ATT error is what
        # makes a phone pair before it opens the channel.
        for chrc in (self.find('encrypt-read'), self.find_channel()):
            try:
                got = await bounded(peer.read_value(self.proxies[chrc['id']]), 10, f'the read of {chrc["id"]}')
                raise CheckFailed(f'expected {chrc["id"]} (encrypt-read) refused before pairing, got {got!r}')
            except ATT_Error as error:
                if error.error_code not in (0x05, 0x0F):
                    raise CheckFailed(f'expected ATT error 0x0f (or 0x05) reading {chrc["id"]} unencrypted, got {att_name(error)}') from None
                step(f'{chrc["id"]} before pairing: refused with {att_name(error)}')

        await self.pair(connection)
        step(f'paired just-works and bonded (encrypted, LTK kept), identity {self.identity} and IRK given')

        changed = await self.watch.wait('the address-changed event', mark, event='address-changed')
        want = {'address': self.identity, 'address-type': 'public', 'old-address': rpa, 'old-address-type': 'random',
                'device': self.device_path}
        if any(changed.get(k) != v for k, v in want.items()):
            raise CheckFailed(f'expected address-changed {want}, got {changed}')
        centrals = json.loads(await self.gattctl('centrals', '--json'))
        if [(c.get('address'), c.get('addressType')) for c in centrals] != [(self.identity, 'public')]:
            raise CheckFailed(f'expected gattctl centrals to list {self.identity} (public) alone, got {centrals}')
        step(f'gattd announced address-changed {rpa} -> {self.identity} (same object); gattctl centrals names the identity')
        await self.subscribe_service_changed(peer)
        self.database_hash = await self.read_database_hash(connection.gatt_client)
        step(f'Database Hash {self.database_hash.hex()}')
        # Pairing closes (gattctl's shortest window) while the bonded central stays.
        closing = len(self.watch.events())
        await self.gattctl('pairing', 'open', '1')

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
        shown = await self.gattctl('get', blob['id'], '--json')
        try:
            hex_value = json.loads(shown)['hex'].lower()
        except (ValueError, KeyError, TypeError):
            hex_value = None
        if hex_value != value.hex():
            raise CheckFailed(f'expected gattctl get {blob["id"]} --json to show the {len(value)} bytes, got {shown[:60]!r}')
        self.written = value
        await self.watch.wait(f'the written event of {blob["id"]} with the whole value', mark, event='written',
                              id=blob['id'], hex=value.hex())
        writes = [e for e in self.watch.events()[mark:] if (e.get('event'), e.get('id')) == ('written', blob['id'])]
        wrong = [e for e in writes if (e.get('address'), e.get('device')) != (self.identity, self.device_path)]
        if wrong:
            raise CheckFailed(f'expected every written event to name {self.identity} and {self.device_path}, got {wrong}')
        step(f'long write: {len(value)} bytes to {blob["id"]} (> MTU-3 = {MTU - 3}: Prepare Write + Execute Write) read back whole '
             f'and in gattctl get; {len(writes)} written event(s), each naming the identity')

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
        reply = self.proxies['reply']
        await bounded(peer.discover_descriptors(reply), 10, 'descriptor discovery of reply')
        ccc = reply.get_descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR)
        if ccc is None:
            raise CheckFailed('expected a CCC descriptor on reply, got none')
        self.reply_ccc = ccc.handle

        await self.echo(connection)

        await self.pairing_window_closed(closing)
        if connection.disconnected.done():
            raise CheckFailed('expected gattd to keep the bonded central once pairing closed (bondedOnly), got a disconnection')
        step('pairing closed; gattd keeps the bonded central (bondedOnly)')
        self.handles = {cid: p.handle for cid, p in self.proxies.items()}
        await self.disconnect_named_by_identity(connection)
        step('handles: ' + ' '.join(f'{cid}=0x{h:04x}' for cid, h in self.handles.items()))

    async def subscribe_service_changed(self, peer):
        """As a phone does once bonded: indications of Service Changed (bluetoothd's GATT
        service), so that bluetoothd keeps a Service Changed for it while it is away."""
        gatt = next((s for s in peer.services if s.uuid == GATT_GENERIC_ATTRIBUTE_SERVICE), None)
        chrc = gatt and next((c for c in gatt.characteristics if c.uuid == GATT_SERVICE_CHANGED_CHARACTERISTIC), None)
        if chrc is None:
            raise CheckFailed(f'expected a Service Changed characteristic in the GATT service, got {gatt}')
        await bounded(peer.discover_descriptors(chrc), 10, 'descriptor discovery of Service Changed')
        ccc = chrc.get_descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR)
        if ccc is None:
            raise CheckFailed('expected a CCC descriptor on Service Changed, got none')
        await bounded(peer.gatt_client.write_value(ccc.handle, b'\x02\x00', with_response=True), 10,
                      'the CCC write to Service Changed')
        self.service_changed = chrc.handle
        step(f'subscribed to Service Changed (0x{chrc.handle:04x}, indications)')

    async def read_database_hash(self, client):
        """The Database Hash (0x2B2A), read by its UUID as a caching phone does on connecting."""
        values = await bounded(client.read_characteristics_by_uuid(GATT_DATABASE_HASH_CHARACTERISTIC, None), 10,
                               'the read of the Database Hash')
        if len(values) != 1 or len(values[0]) != 16:
            raise CheckFailed(f'expected one 16-byte Database Hash, got {[bytes(v).hex() for v in values]}')
        return bytes(values[0])

    async def moved(self):
        """Phase 2: gattd was reloaded while this central was away with a definition whose
        handles move (--moved-config). Back from a new RPA, it finds the change by the
        Database Hash, discovers again and reads each characteristic by its new handle."""
        with open(self.args.moved_config) as f:
            moved = json.load(f)
        logged = len(self.gattd_log())
        connection, paired = await self.return_on_same_object('after the reload')
        client = connection.gatt_client
        digest = await self.read_database_hash(client)
        if digest == self.database_hash:
            raise CheckFailed(f'expected the Database Hash changed by the reload, got {digest.hex()} as before')
        step(f'Database Hash {self.database_hash.hex()} -> {digest.hex()}: the table changed; discovering again')
        self.database_hash = digest
        self.config = moved
        peer = Peer(connection)
        await bounded(peer.discover_services(), 20, 'primary service discovery')
        await bounded(peer.discover_characteristics(), 20, 'characteristic discovery')
        self.check_tree(peer)
        before, self.handles = self.handles, {cid: p.handle for cid, p in self.proxies.items()}
        moves = [f'{cid} 0x{before[cid]:04x}->0x{h:04x}' for cid, h in self.handles.items() if before.get(cid) != h]
        if not moves:
            raise CheckFailed(f'expected handles moved by the reload, got the same {self.handles}')
        step('moved: ' + ', '.join(moves))
        wrong = await self.read_by_handles(client)
        if wrong:
            raise CheckFailed('reads by the handles discovered again:\n  ' + '\n  '.join(wrong))
        reply = self.proxies['reply']
        await bounded(peer.discover_descriptors(reply), 10, 'descriptor discovery of reply')
        ccc = reply.get_descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR)
        if ccc is None:
            raise CheckFailed('expected a CCC descriptor on reply after the rediscovery, got none')
        self.reply_ccc = ccc.handle
        said = await until(lambda: next((line for line in self.gattd_log()[logged:]
                                         if 'returned after the GATT table changed while it was away' in line
                                         and log_fields(line).get('address') == self.identity), None),
                           10 * SLOW, f"gattd's 'returned after the GATT table changed while it was away' for {self.identity}")
        step(f'gattd: {said.strip()}')
        # bluetoothd's behaviour (docs/bluez-contract.md §12), printed, not asserted.
        ranges = [f'0x{int.from_bytes(v[:2], "little"):04x}-0x{int.from_bytes(v[2:4], "little"):04x}'
                  if len(v) == 4 else v.hex() for v in connection.service_changed]
        step(f'Service Changed indications on this visit (informational): {len(ranges)} {ranges}')
        if paired or connection.disconnected.done():
            raise CheckFailed(f'expected the bonded central kept with no new pairing, got pairing {paired}, '
                              f'disconnected {connection.disconnected.done()}')
        await self.disconnect_named_by_identity(connection)

    async def echo(self, connection):
        """Opens the channel on the PSM read from its characteristic and echoes
        --channel-bytes each way through gattd's relayed program (cat), SDU for SDU: each
        numbered, of varied size, back whole and in order; then closes it."""
        chrc = self.find_channel()
        raw = await bounded(Peer(connection).read_value(self.proxies[chrc['id']]), 10, f'the read of {chrc["id"]}')
        psm = int.from_bytes(raw, 'little')
        if len(raw) != 2 or not 0x80 <= psm <= 0xFF:
            raise CheckFailed(f'expected {chrc["id"]} to hold a little-endian UInt16 PSM in 0x80...0xff, got {raw.hex()}')
        logged = len(self.gattd_log())
        spec = LeCreditBasedChannelSpec(psm=psm, mtu=CHANNEL_MTU)
        began = time.monotonic()
        channel = await bounded(connection.create_l2cap_channel(spec), 20, f'the channel on PSM 0x{psm:02x} to open')
        opened = await until(lambda: next((log_fields(line) for line in self.gattd_log()[logged:]
                                           if 'channel opened' in line), None), 10 * SLOW, "gattd's 'channel opened'")
        want = {'channel': chrc['channel'], 'address': self.identity, 'address.type': 'public', 'device': self.device_path}
        if any(opened.get(k) != v for k, v in want.items()):
            raise CheckFailed(f"expected gattd's 'channel opened' with {want}, got {opened}")
        step(f'channel {chrc["channel"]} open on PSM 0x{psm:02x} (read from {chrc["id"]}); gattd names {self.identity}, '
             f'MTU {channel.mtu}/{channel.peer_mtu}, MPS {channel.mps}/{channel.peer_mps}')

        pattern = bytes(range(256)) * (CHANNEL_MTU // 256 + 2)
        sdus, total = [], 0
        while total < self.args.channel_bytes:
            size = 4 + (len(sdus) * 389 + 17) % (CHANNEL_MTU - 3)
            start = len(sdus) % 256
            sdus.append(len(sdus).to_bytes(4, 'big') + pattern[start:start + size - 4])
            total += size
        received = []
        state = {'echoed': 0}
        progress = asyncio.Event()
        closed = asyncio.get_running_loop().create_future()

        def sink(sdu):
            received.append(bytes(sdu))
            state['echoed'] += len(sdu)
            progress.set()

        channel.sink = sink
        channel.on('close', lambda: closed.done() or closed.set_result(None))

        def account():
            """What came back against what was sent: late, missing, doubled, or changed."""
            numbers = [int.from_bytes(s[:4], 'big') for s in received]
            seen = set()
            doubled = sorted({n for n in numbers if n in seen or seen.add(n)})
            missing = [n for n in range(len(sdus)) if n not in seen]
            late = sum(1 for a, b in zip(numbers, numbers[1:]) if b < a)
            changed = [n for n, s in zip(numbers, received) if n >= len(sdus) or s != sdus[n]]
            return (f'{len(received)} of {len(sdus)} SDUs back ({state["echoed"]} of {total} bytes) '
                    f'{time.monotonic() - began:.1f} s after the open request: '
                    f'{late} late, missing {missing[:10]}, doubled {doubled[:10]}, changed {changed[:10]}')

        async def caught_up(limit, what):
            while state['echoed'] < limit:
                if closed.done():
                    raise CheckFailed(f'expected the channel to stay open, got it closed: {account()}')
                progress.clear()
                try:
                    await bounded(progress.wait(), 20, what)
                except CheckFailed as failure:
                    raise CheckFailed(f'{failure}: {account()}') from None

        # Bumble's debug log writes every ACL packet in hex: during the transfer it would
        # cost more CPU than the transfer itself (five times slower under TCG).
        bumble_logger = logging.getLogger('bumble')
        level = bumble_logger.level
        bumble_logger.info('bumble_central.py: debug logging paused for the channel transfer')
        bumble_logger.setLevel(max(level, logging.INFO))
        sent = 0
        started = time.monotonic()
        try:
            for sdu in sdus:
                await caught_up(sent + len(sdu) - CHANNEL_WINDOW, 'the echo to come back')
                channel.write(sdu)  # one write, one SDU: drained before the next
                sent += len(sdu)
                await bounded(channel.drain(), 20, f'credits to send SDU {int.from_bytes(sdu[:4], "big")}')
            await caught_up(total, 'the last echoes')
        finally:
            bumble_logger.setLevel(level)
        seconds = time.monotonic() - started
        if received != sdus:
            raise CheckFailed(f'expected the {len(sdus)} SDUs back whole and in order, got {account()}')
        await bounded(channel.disconnect(), 10, 'the channel to close')
        ended = await until(lambda: next((line for line in self.gattd_log()[logged:] if 'channel closed' in line), None),
                            10 * SLOW, "gattd's 'channel closed'")
        fields = log_fields(ended)
        if ('the central closed the channel' not in ended or fields.get('bytes.in') != str(total)
                or fields.get('bytes.out') != str(total) or fields.get('address') != self.identity):
            raise CheckFailed(f"expected gattd's 'channel closed: the central closed the channel' for {self.identity} "
                              f'with bytes.in={total} bytes.out={total}, got {ended!r}')
        await until(lambda: any('channel program ended' in line and 'program=cat' in line
                                for line in self.gattd_log()[logged:]), 10 * SLOW, 'cat to end with the channel')
        step(f'channel echo: {len(sdus)} SDUs of 4...{CHANNEL_MTU} bytes, {total} bytes each way in order, none lost '
             f'or doubled, in {seconds:.1f} s ({2 * total / seconds / 1024:.0f} KiB/s both ways); closed by Bumble, '
             f'gattd counted {total} bytes each way and cat ended')

    async def return_on_same_object(self, when):
        """Back from a new RPA before bluetoothd restarts: the `connected` event names the
        identity (public) on the object of phase 1, and the link is encrypted with the bond's
        key when bluetoothd asks. Returns the connection and whether a pairing ran."""
        old, new = await self.new_rpa()
        mark = len(self.watch.events())
        connection = await self.connect()
        back = await self.watch.wait('the connected event of the return', mark, event='connected')
        if (back['address'], back.get('address-type'), back['device']) != (self.identity, 'public', self.device_path):
            raise CheckFailed(f'expected the return from RPA {new} announced as {self.identity} (public) on '
                              f'{self.device_path}, got {back}')
        step(f'back from a new RPA {new} (was {old}), {when}: announced as {self.identity}, same object')
        return connection, await self.encrypt_with_bond(connection, 'phase 1')

    async def phase2(self, prepared):
        status = await self.gattctl('pairing')
        if ': closed' not in status:
            raise CheckFailed(f'expected gattd\'s pairing window closed before the return, got {status.strip()!r}')
        connection, paired = await self.return_on_same_object('pairing closed')
        client = connection.gatt_client
        if client.services:
            raise CheckFailed(f'expected no discovered services on the new connection, got {len(client.services)}')
        wrong = await self.read_by_handles(client)
        if paired:
            raise CheckFailed('expected no new pairing on reconnection, got a pairing')
        if connection.disconnected.done():
            raise CheckFailed('expected gattd to keep the bonded central (bondedOnly), got a disconnection')
        dropped = [line for line in self.gattd_log() if 'disconnecting a central that is not bonded' in line]
        if dropped:
            raise CheckFailed(f'expected gattd to take the returning central for bonded, got {dropped}')
        if wrong:
            raise CheckFailed('reads by the handles discovered before gattd restarted:\n  ' + '\n  '.join(wrong))
        step('phase 3: every characteristic read its own value by its cached handle, no rediscovery, no new pairing')
        self.reply_value = expected_value(next(c for _, c in self.characteristics() if c['id'] == 'reply')['value'])
        await self.targeted(connection, prepared)
        await self.disconnect_named_by_identity(connection)

    async def encrypt_with_bond(self, connection, bond):
        """Encrypts a returning central's link with its bond when the peripheral asks;
        returns the list the pairings that must not happen go to."""
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
        step(f'encrypted with the bond from {bond}')
        return paired

    async def read_by_handles(self, client, only=None):
        """Reads the readable characteristics (those of `only`, when given) by the handles
        discovered last (phase 1, again in phase 2); returns what was wrong."""
        wrong = []
        for _, chrc in self.characteristics():
            if not self.readable(chrc) or only is not None and chrc['id'] not in only:
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
        return wrong

    async def device_on(self, transport_name, name, address):
        """A Bumble device of its own on another controller; closed when the program ends."""
        transport = await bounded(open_transport(transport_name), 20, f'the transport {transport_name}')
        await self.stack.enter_async_context(transport)
        device = Device.from_config_with_hci(DeviceConfiguration(name=name, address=hci.Address(address)),
                                             transport.source, transport.sink)
        await bounded(device.power_on(), 30, f'{name} to power on')
        return device

    async def prepare_other(self):
        """A second central on --other-transport (no privacy, its public address, never
        bonded: it stays while pairing is open), for other_central(). It first holds a link
        to a third device (--holder-transport, advertising for that alone): btvirt tells the
        peripheral the central's connection handle and files the link under the first handle
        free at the peripheral, so the two ends agree only when both have the same handles
        taken (Tests/vm/README.md, gattd-channels); hci0 has Bumble's link at 42, so hci2's
        must be 43 too. Made while the scenario restarts gattd (it takes seconds under TCG).
        Returns the device and the holding link."""
        holder = await self.device_on(self.args.holder_transport, 'gattd-bumble-holder', 'F0:F1:F2:F3:F4:F7')
        other = await self.device_on(self.args.other_transport, 'gattd-bumble-other', 'F0:F1:F2:F3:F4:F6')
        await holder.start_advertising(own_address_type=hci.OwnAddressType.RANDOM)
        held = await bounded(other.connect(holder.random_address, transport=PhysicalTransport.LE,
                                           own_address_type=hci.OwnAddressType.PUBLIC, timeout=None),
                             30, f'the other central\'s link to the holder {holder.random_address}')
        return other, held

    async def other_central(self, prepared):
        """The second central (prepare_other) connected to gattd: its address, that link and
        the holding link."""
        other, held = await prepared
        # As a phone does, it connects once it has seen gattd advertise: btvirt refuses a
        # connection at once (0x3E) while the peripheral is not advertising (on 5.66 with
        # Linux 6.1 it was not, right after Bumble's connection).
        for attempt in range(1, 4):
            await self.find_gattd(other)
            try:
                connection = await bounded(
                    other.connect(self.peer_address, transport=PhysicalTransport.LE,
                                  own_address_type=hci.OwnAddressType.PUBLIC, timeout=None),
                    30, f'the other central\'s connection to {self.peer_address}')
                break
            except BumbleConnectionError as error:
                if attempt == 3:
                    raise CheckFailed(f'expected the other central to connect to gattd, got {error} three times') from None
                step(f'the other central\'s connection failed ({error}); it scans again')
        if connection.handle == held.handle:
            raise CheckFailed(f'expected the link to gattd on another handle than the holding link, got {connection.handle}')
        disconnected = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
        connection.disconnected = disconnected
        return text(other.public_address), connection, held

    async def subscribe_reply(self, connection, sink):
        """Subscribes to `reply` by the handles discovered last, as a phone with a
        cached table does (the other central uses them too: they are gattd's, not a
        central's)."""
        client = connection.gatt_client
        client.notification_subscribers.setdefault(self.handles['reply'], set()).add(sink)
        await bounded(client.write_value(self.reply_ccc, b'\x01\x00', with_response=True), 10,
                      f'the CCC write to reply (0x{self.reply_ccc:04x})')

    async def targeted(self, connection, prepared):
        """A value for this central alone, by its identity, with another central subscribed
        too, and then a value for all. bluetoothd 5.79 and later (--targeted) gives each
        central a socket of its own: the targeted value reaches this central and not the
        other. 5.66 shares one socket: gattd refuses `--to` as untargetable (never "not
        subscribed"). Either way the value for all reaches both. Proved by order, not by
        waiting: a value wrongly sent to the other would arrive there before the value for
        all. The window opened here (the other central is not bonded) stays open for the
        re-pair."""
        mark = len(self.watch.events())
        await self.gattctl('pairing', 'open', str(120 * SLOW))
        await self.watch.wait('pairing open', mark, event='pairing', state='open')
        other_address, other, held = await self.other_central(prepared)
        seen = await self.watch.wait('the other central\'s connected event', mark, event='connected',
                                     address=other_address)
        mine, theirs = [], []
        await self.subscribe_reply(other, lambda value: theirs.append(bytes(value)))
        await self.subscribe_reply(connection, lambda value: mine.append(bytes(value)))
        await self.watch.wait('reply subscribed', mark, event='subscribed', id='reply')
        if self.args.targeted:
            for device in (self.device_path, seen['device']):
                await self.watch.wait(f'central-subscribed reply for {device}', mark, event='central-subscribed',
                                      id='reply', device=device)
        step(f'this central and another ({other_address}, public, not bonded) subscribed to reply')
        base = int.from_bytes(self.reply_value, 'little')  # read by its cached handle in phase 3
        targeted, for_all = ((base + n) % 0x10000 for n in (1, 2))
        process = await asyncio.create_subprocess_exec(
            self.args.gattctl, 'set', 'reply', '--uint16', str(targeted), '--to', self.identity,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await bounded(process.communicate(), 30 * SLOW, 'gattctl set --to to exit')
        said = (out + err).decode(errors='replace').strip()
        if self.args.targeted:
            if process.returncode != 0:
                raise CheckFailed(f'expected gattctl set reply --to {self.identity} to exit 0, got {process.returncode}: {said}')
        elif process.returncode != 5 or 'not subscribed' in said or 'cannot reach chosen centrals' not in said:
            raise CheckFailed(f'expected gattctl set reply --to {self.identity} refused with exit 5, "cannot reach '
                              f'chosen centrals" (5.66 shares one socket), got {process.returncode}: {said}')
        changed = len(self.watch.events())
        await self.gattctl('set', 'reply', '--uint16', str(for_all))
        await self.watch.wait(f'the changed event of reply ({for_all})', changed, event='changed', id='reply',
                              hex=for_all.to_bytes(2, 'little').hex(), origin='control')
        want_all = for_all.to_bytes(2, 'little')
        for name, got in (('this central', mine), ('the other central', theirs)):
            try:
                await until(lambda: want_all in got, 10 * SLOW, f'the value for all at {name}')
            except CheckFailed as failure:
                raise CheckFailed(f'{failure}: it received {[v.hex() for v in got]}') from None
        want_one = targeted.to_bytes(2, 'little')
        if self.args.targeted:
            if want_one not in mine[:mine.index(want_all)]:
                raise CheckFailed(f'expected the targeted value {want_one.hex()} at this central before the value for '
                                  f'all, got {[v.hex() for v in mine]}')
            if want_one in theirs:
                raise CheckFailed(f'expected the targeted value {want_one.hex()} at this central alone, got it at the '
                                  f'other too: {[v.hex() for v in theirs]}')
            step(f'gattctl set reply --to {self.identity}: {want_one.hex()} reached this central and not the other; '
                 f'the value for all {want_all.hex()} reached both')
        else:
            if want_one in mine or want_one in theirs:
                raise CheckFailed(f'expected the refused value {want_one.hex()} nowhere, got {mine} and {theirs}')
            step(f'gattctl set reply --to refused as 5.66 cannot target ({said}); the value for all '
                 f'{want_all.hex()} reached both')
        self.reply_value = want_all
        leaving = len(self.watch.events())
        await self.disconnect(other)
        await self.watch.wait('the other central\'s disconnected event', leaving, event='disconnected',
                              address=other_address)
        await held.disconnect()

    async def repair(self):
        """The phone is reset: it forgets gattd, takes a new IRK (the same identity) and
        pairs again while the window is open. gattd's side cannot resolve the new RPA with
        the IRK it kept, so it is a new object; bluetoothd keeps two objects with the
        identity (bluez/bluez #1095), and gattd lists one bond and one central for it, logs
        both objects and removes neither (as gattd-privacy's phase 3)."""
        await self.forget()
        old_device = self.device_path
        old, rpa = await self.new_rpa(bytes.fromhex(self.args.new_irk))
        mark = len(self.watch.events())
        connection = await self.connect()
        first = await self.watch.wait('the connected event', mark, event='connected')
        if (first['address'], first.get('address-type')) != (rpa, 'random') or first['device'] == old_device:
            raise CheckFailed(f'expected the connected event to name RPA {rpa} (random) on an object other than '
                              f'{old_device}, got {first}')
        step(f'reset with a new IRK: connected from RPA {rpa}, a new object {first["device"]}')
        await self.pair(connection)
        changed = await self.watch.wait('the address-changed event', mark, event='address-changed')
        want = {'address': self.identity, 'old-address': rpa, 'device': first['device']}
        if any(changed.get(k) != v for k, v in want.items()):
            raise CheckFailed(f'expected address-changed {want}, got {changed}')
        bonds = json.loads(await self.gattctl('bonds', '--json'))
        centrals = json.loads(await self.gattctl('centrals', '--json'))
        if [(b.get('address'), b.get('bonded'), b.get('connected')) for b in bonds] != [(self.identity, True, True)]:
            raise CheckFailed(f'expected gattctl bonds to list {self.identity} once, bonded and connected, got {bonds}')
        if [(c.get('address'), c.get('addressType')) for c in centrals] != [(self.identity, 'public')]:
            raise CheckFailed(f'expected gattctl centrals to list {self.identity} (public) alone, got {centrals}')
        step(f'paired again: address-changed {rpa} -> {self.identity}; gattctl bonds and centrals list it once')
        shared = [line for line in self.gattd_log() if 'central paired again (new IRK)' in line
                  and self.identity in line and first['device'] in line]
        if not shared:
            raise CheckFailed(f"expected gattd's 'central paired again (new IRK)' naming {self.identity} and "
                              f"{first['device']}, got none")
        step(f'gattd: {shared[-1].strip()}')
        wrong = await self.read_by_handles(connection.gatt_client, only=('secret',))
        if wrong:
            raise CheckFailed('\n  '.join(wrong))
        leaving = len(self.watch.events())
        await self.disconnect(connection)
        if not self.args.older_first:
            # Before 5.80 bluetoothd files the end of the newer link under the older object
            # (docs/bluez-contract.md §12): gattd-privacy says what it does there.
            await self.watch.wait('the disconnected event', leaving, event='disconnected', address=self.identity)
            left = json.loads(await self.gattctl('centrals', '--json'))
            if left:
                raise CheckFailed(f'expected no central after the disconnect, got {left}')
        step('disconnected')
        closing = len(self.watch.events())
        await self.gattctl('pairing', 'open', '1')
        await self.pairing_window_closed(closing)
        self.closed_at = len(self.watch.events())
        self.watch.check_tracking()

    async def restarted(self):
        """After gattd's bluetoothd restarted: back from an RPA of the new IRK with pairing
        closed; bluetoothd's object is now dev_<identity>, one bond, the newer one (no new
        pairing), and the encrypted values read by the handles discovered in phase 2."""
        opened = [e for e in self.watch.events()[self.closed_at:] if e.get('event') == 'pairing']
        if opened:
            raise CheckFailed(f"expected gattd's pairing window closed since the re-pair, got {opened}")
        _, new = await self.new_rpa()
        mark = len(self.watch.events())
        connection = await self.connect()
        back = await self.watch.wait('the connected event', mark, event='connected')
        path = 'dev_' + self.identity.replace(':', '_')
        if (back['address'], back.get('address-type')) != (self.identity, 'public') or not back['device'].endswith('/' + path):
            raise CheckFailed(f'expected the return from RPA {new} announced as {self.identity} (public) on .../{path}, '
                              f'got {back}')
        step(f'bluetoothd restarted; back from RPA {new}: announced as {self.identity} on {back["device"]}')
        paired = await self.encrypt_with_bond(connection, 'the re-pair')
        bonds = json.loads(await self.gattctl('bonds', '--json'))
        if [(b.get('address'), b.get('bonded'), b.get('connected')) for b in bonds] != [(self.identity, True, True)]:
            raise CheckFailed(f'expected gattctl bonds to list {self.identity} once, bonded and connected, got {bonds}')
        wrong = await self.read_by_handles(connection.gatt_client, only=('secret', 'other.l2cap-psm', 'reply'))
        if wrong:
            raise CheckFailed('reads by cached handles after the restart:\n  ' + '\n  '.join(wrong))
        if paired or connection.disconnected.done():
            raise CheckFailed(f'expected the bonded central kept with no new pairing, got pairing {paired}, '
                              f'disconnected {connection.disconnected.done()}')
        leaving = len(self.watch.events())
        await self.disconnect(connection)
        await self.watch.wait('the disconnected event', leaving, event='disconnected', address=self.identity)
        step('encrypted reads by cached handles with the newer bond, no new pairing; disconnected')
        self.watch.check_tracking()

    async def stranger(self):
        """Another phone: a third IRK, never bonded with gattd, connects from an RPA of it
        while pairing is closed; gattd (bondedOnly) drops it and logs why."""
        await self.forget()
        _, rpa = await self.new_rpa(bytes.fromhex(self.args.stranger_irk))
        mark = len(self.watch.events())
        logged = len(self.gattd_log())
        try:
            connection = await self.connect()
        except Exception as error:  # gattd may drop it before Bumble's connect returns
            step(f'the connection ended as it was made: {error!r}')
            connection = None
        first = await self.watch.wait('the connected event', mark, event='connected', address=rpa)
        if first.get('address-type') != 'random':
            raise CheckFailed(f'expected the stranger announced by RPA {rpa} (random), got {first}')
        why = await until(lambda: next((line for line in self.gattd_log()[logged:]
                                        if 'disconnecting a central that is not bonded' in line
                                        and log_fields(line).get('device') == rpa), None),
                          20 * SLOW, f"gattd's 'disconnecting a central that is not bonded' for {rpa}")
        await self.watch.wait('the disconnected event', mark, event='disconnected', address=rpa)
        if connection is not None:
            await bounded(connection.disconnected, 20, "the stranger's disconnection")
        step(f'an unbonded private central from {rpa} was dropped: {why.strip()}')
        self.watch.check_tracking()

    def readable(self, chrc):
        return any(f in chrc['flags'] for f in ('read', 'encrypt-read', 'encrypt-authenticated-read', 'secure-read'))

    def find(self, flag):
        for _, chrc in self.characteristics():
            if flag in chrc['flags']:
                return chrc
        raise CheckFailed(f'expected a characteristic with flag {flag} in the config, found none')

    def find_channel(self):
        for _, chrc in self.characteristics():
            if 'channel' in chrc and 'encrypt-read' in chrc['flags']:
                return chrc
        raise CheckFailed('expected a channel with security "encrypt" in the config, found none')

    def find_writable(self):
        for _, chrc in self.characteristics():
            if any(f in chrc['flags'] for f in ('write', 'encrypt-write')) and chrc.get('maxLength', 0) > MTU - 3:
                return chrc
        raise CheckFailed(f'expected a writable characteristic with maxLength > {MTU - 3} in the config, found none')

    def check_value(self, chrc, got, how):
        if 'channel' in chrc:
            psm = int.from_bytes(got, 'little')
            if len(got) != 2 or not 0x80 <= psm <= 0xFF or self.psm not in (None, psm):
                raise CheckFailed(f'{how} of {chrc["id"]}: expected a UInt16 PSM in 0x80...0xff'
                                  + (f' (0x{self.psm:02x} as before)' if self.psm else '') + f', got {got.hex()}')
            self.psm = psm
            step(f'{how} {chrc["id"]}: PSM 0x{psm:02x}')
            return
        if chrc['id'] == self.find_writable()['id'] and self.written is not None:
            want = self.written
        elif chrc['id'] == 'reply' and self.reply_value is not None:
            want = self.reply_value
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
        want = {}
        for service, chrc in self.characteristics():
            want.setdefault(full_uuid(service['uuid']), []).append(full_uuid(chrc['uuid']))
        for service in self.config['services']:
            want.setdefault(full_uuid(service['uuid']), [])
        ids = {(full_uuid(s['uuid']), full_uuid(c['uuid'])): c['id'] for s, c in self.characteristics()}
        self.proxies = {}
        got = {}
        for service in peer.services:
            uuid = service.uuid.to_hex_str('-').lower()
            if uuid in want:
                got[uuid] = [c.uuid.to_hex_str('-').lower() for c in service.characteristics]
                for c in service.characteristics:
                    key = (uuid, c.uuid.to_hex_str('-').lower())
                    if key in ids:
                        self.proxies[ids[key]] = c
        if got != want:
            raise CheckFailed(f'expected the services and characteristics {want}, discovered {got}')
        step(f'discovered {len(got)} services with {sum(len(v) for v in got.values())} characteristics as configured '
             f'(PSM characteristics included)')


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--transport', required=True, help='Bumble transport, e.g. hci-socket:1')
    parser.add_argument('--peer', required=True, help="gattd's adapter address")
    parser.add_argument('--config', required=True, help="gattd's configuration")
    parser.add_argument('--moved-config', required=True,
                        help='the configuration gattd is reloaded with while this central is away (phase 2)')
    parser.add_argument('--gattctl', required=True, help='gattctl, for what a program would do (pairing, centrals, get)')
    parser.add_argument('--watch', required=True, help='the file the scenario\'s gattctl watch --json writes')
    parser.add_argument('--gattd-log', required=True, help="gattd's log (the channel's lines)")
    parser.add_argument('--irk', default='5b1e0c3a79d2f8046ea1c7b32d9f0e48',
                        help="Bumble's IRK (16 bytes hex), as a phone keeps one for its life")
    parser.add_argument('--new-irk', default='c4e1a9073b5d28f61e0a7c93b2d4f815',
                        help='the IRK Bumble takes when it is reset and pairs again (the same identity)')
    parser.add_argument('--stranger-irk', default='7e29d0c6a1b84f3e95c2d7a06b13e8f4',
                        help='the IRK of the phone that never bonded (its identity is never given)')
    parser.add_argument('--other-transport', required=True,
                        help='a second controller for a second central (targeted values), e.g. hci-socket:2')
    parser.add_argument('--holder-transport', required=True,
                        help='a third controller the second central holds a link to first (btvirt), e.g. hci-socket:3')
    parser.add_argument('--targeted', action='store_true',
                        help="bluetoothd sends a socket's values to its central alone (5.79 and later)")
    parser.add_argument('--older-first', action='store_true', help='bluetoothd finds the older of two objects '
                        'with one address first (before 5.80; bluez/bluez #1095)')
    parser.add_argument('--long', type=int, default=400, help='bytes of the long write (> MTU-3)')
    parser.add_argument('--channel-bytes', type=int, default=256 * 1024, help='bytes echoed each way over the channel')
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
        # LE privacy: the controller gets an RPA made from the IRK at power-on; no rotation
        # while connected (le_rpa_timeout 0): new_rpa() sets a new one itself.
        device = Device.from_config_with_hci(
            DeviceConfiguration(name='gattd-bumble-central', address=hci.Address('F0:F1:F2:F3:F4:F5'),
                                irk=bytes.fromhex(args.irk), le_privacy_enabled=True, le_rpa_timeout=0),
            transport.source, transport.sink)
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=True, mitm=False, bonding=True,
            delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT),
            identity_address_type=PairingConfig.AddressType.PUBLIC)
        central.device = device
        await bounded(device.power_on(), 30, 'the controller to power on')
        central.identity = text(device.public_address)
        step(f'Bumble is up on {args.transport}: identity {central.identity} (public), RPA {text(device.random_address)}')
        async with contextlib.AsyncExitStack() as stack:
            central.stack = stack
            await central.phase1()
            print('phase 1 done', flush=True)
            await go()
            await central.moved()
            print('phase 2 done', flush=True)
            prepared = asyncio.create_task(central.prepare_other())
            await go()
            await central.phase2(prepared)
            await central.repair()
            print('phase 4 done', flush=True)
            await go()
            await central.restarted()
            await central.stranger()


async def go():
    """Waits for the scenario's "go" (it restarted gattd or bluetoothd meanwhile)."""
    line = await bounded(asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline), 180,
                         'the scenario to say go on stdin')
    if line.strip() != 'go':
        raise CheckFailed(f'expected "go" on stdin, got {line!r}')


if __name__ == '__main__':
    try:
        asyncio.run(main())
    except CheckFailed as failure:
        print(f'FAIL: {failure}', flush=True)
        sys.exit(1)
