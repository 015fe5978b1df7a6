#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""programs.py: what a real central sees of programs that drive gattd, run by
scenarios/gattd-programs.sh with configs/programs.json:

  0. a secondary service, included by the primary one, as the central's stack reports them;
  1. the advertisement's manufacturer data as configured (ffff=01) and a second one, a
     broadcast beacon (fffe=beac), at the same time; then `gattctl advertise
     set` changes it while gattd runs, and the central's scan sees ffff=02 (no reload);
  3. (last) gattd killed with SIGKILL while the central is connected and started again:
     the central reads the value it wrote before the kill;
  2. a read of `reading` is answered by the handler program (its bytes, not the stored
     value); a write to `gate` is refused by the handler with application error 0x81,
     which reaches the central as BlueZ reports ATT errors; after gattd's restart (3) the
     handler, registered again by itself, answers `reading` again.

usage: programs.py --gattctl PATH [--adapter hci1] [--peer ADDR]
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bluezcentral import Central, CheckFailed, at_address, full_uuid, peer_arguments, run, step  # noqa: E402
from central import att_app_error  # noqa: E402

SERVICE = '12345678-1234-5678-1234-56789abcc000'
SECONDARY = '12345678-1234-5678-1234-56789abcc100'
READING = '12345678-1234-5678-1234-56789abcc001'
GATE = '12345678-1234-5678-1234-56789abcc002'
NOTE = '12345678-1234-5678-1234-56789abcc003'


def manufacturer(dev):
    return {int(k): bytes(v) for k, v in dev.get('ManufacturerData', {}).items()}


def plan(args):
    central = Central.fresh(args.adapter, args.peer)

    def ours(data):
        return lambda dev: at_address(args.peer)(dev) and manufacturer(dev).get(0xFFFF) == data
    path, _ = central.discover(ours(b'\x01'), what='the advertisement with ffff=01')
    step('scan: ffff=01 as configured')
    # The second advertisement at the same time: a non-connectable beacon (its own address
    # when the controller gives it one, so it is matched by its data).
    beacon = b'\xbe\xac' + bytes(25)
    central.discover(lambda dev: manufacturer(dev).get(0xFFFE) == beacon, what='the 31-byte beacon with fffe=beac...')
    step('scan: the beacon as well, its advertising data exactly 31 bytes (two advertisements at once)')
    changed = subprocess.run([args.gattctl, 'advertise', 'set', 'main', '{"manufacturerData": {"0xFFFF": {"hex": "02"}}}'],
                             capture_output=True, text=True, timeout=30)
    if changed.returncode != 0:
        raise CheckFailed('gattctl advertise set failed: %s' % changed.stderr.strip())
    central.discover(ours(b'\x02'), what='the advertisement with ffff=02 after gattctl advertise set')
    step('scan: ffff=02 after gattctl advertise set (no reload, no re-registration)')

    central.connect(path)
    services = {str(props['UUID']).lower(): (str(p), props)
                for p, ifaces in central.objects().items()
                for props in [ifaces.get('org.bluez.GattService1')] if props and str(props['Device']) == path}
    if SECONDARY not in services or SERVICE not in services:
        raise CheckFailed('services seen: %s' % sorted(services))
    secondary_path, secondary = services[SECONDARY]
    if bool(secondary['Primary']):
        raise CheckFailed('service %s is seen as primary; the definition says secondary' % SECONDARY)
    includes = [str(i) for i in services[SERVICE][1].get('Includes', [])]
    if includes != [secondary_path]:
        raise CheckFailed('service %s includes %s, expected the secondary service %s' % (SERVICE, includes, secondary_path))
    step('secondary service %s seen as secondary, included by %s' % (SECONDARY[:8], SERVICE[:8]))
    chrcs = central.characteristics(path, SERVICE, {'reading': READING, 'gate': GATE, 'note': NOTE})
    value = central.read(chrcs['reading'])
    if value != b'from the handler':
        raise CheckFailed('read reading = %r, expected the handler\'s b"from the handler"' % value)
    step('read reading = "%s" (answered by the handler program)' % value.decode())
    central.expect_dbus_error(lambda: central.write(chrcs['gate'], b'\x05'), *att_app_error(0x81),
                              what='write to gate')
    step('write to gate -> application error 0x81 from the handler')

    # gattd killed while this central stays connected, started again by hand: the central
    # finds the services again and reads the value it wrote before the kill.
    central.write(chrcs['note'], b'before the kill')
    step('wrote note = "before the kill"; gattd is killed with SIGKILL and started again')
    restarted = subprocess.run(['/bin/bash', '-c', args.restart], capture_output=True, text=True, timeout=120)
    if restarted.returncode != 0:
        raise CheckFailed('restarting gattd failed: %s' % (restarted.stdout + restarted.stderr).strip())
    if not central.prop(path, 'org.bluez.Device1', 'Connected'):
        central.connect(path)
        step('the link dropped with gattd; reconnected')

    def note_again():
        for p, ifaces in central.objects().items():
            c = ifaces.get('org.bluez.GattCharacteristic1')
            if c and str(p).startswith(path + '/'):
                for name, uuid in (('note', NOTE), ('reading', READING)):
                    if str(c['UUID']).lower() == full_uuid(uuid):
                        found[name] = str(p)
        return 'note' in found and 'reading' in found
    found = {}
    central.pump_until(note_again, 60, 'the note characteristic after gattd came back')
    value = central.read(found['note'])
    if value != b'before the kill':
        raise CheckFailed('after the SIGKILL and restart note reads %r, expected b"before the kill"' % value)
    step('after gattd\'s SIGKILL and restart the central reads note = "before the kill" (saved before the write was answered)')
    value = central.read(found['reading'])
    if value != b'from the handler':
        raise CheckFailed('after gattd\'s restart reading = %r: the handler program did not serve again' % value)
    step('after gattd\'s restart reading = "from the handler": the program registered again by itself')
    central.disconnect(path)
    step('disconnected')


def main():
    parser = peer_arguments(__doc__)
    parser.add_argument('--gattctl', required=True)
    parser.add_argument('--restart', required=True, help='shell command: SIGKILL gattd and start it again')
    args = parser.parse_args()
    run(lambda: plan(args))


if __name__ == '__main__':
    main()
