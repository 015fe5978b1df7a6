#!/bin/bash
# SPDX-License-Identifier: MIT
# reset-dirty: leaves behind what a careless scenario could (run-suite's stand-in set runs
# reset-clean after it in the same boot, which checks that stage2's reset took it all away):
# a process in a session of its own, files in /tmp, /var/lib, /run and the bus policy
# directory, an adapter alias bluetoothd saves in /var/lib/bluetooth, a stopped bluetoothd
# started again by the scenario.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
setsid sleep 100000 </dev/null >/dev/null 2>&1 &
echo "left a process in its own session: pid $!"
echo dirty >/tmp/gattd-vm-dirty
mkdir -p /var/lib/gattd-vm-dirty && echo dirty >/var/lib/gattd-vm-dirty/state.json
echo dirty >/run/gattd-vm-dirty
cp "$ROOT/systemd/org.gattd.conf" /etc/dbus-1/system.d/gattd-vm-dirty.conf
dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Set \
    string:org.bluez.Adapter1 string:Alias variant:string:gattd-vm-dirty >/dev/null \
    || { echo "FAIL: could not set hci0's Alias"; exit 1; }
wait_for_line "/var/lib/bluetooth/$HCI0_ADDR/settings" '^Alias=gattd-vm-dirty$' 10 || exit 1
echo "hci0 Alias set to gattd-vm-dirty, saved in /var/lib/bluetooth/$HCI0_ADDR/settings"
echo "$BLUETOOTHD_PID" >/tmp/gattd-vm-dirty-bluetoothd
# a bond of hci1's with hci0, as bluetoothd stores one (reset-clean's bluetoothd must load none)
mkdir -p "/var/lib/bluetooth/$HCI1_ADDR/$HCI0_ADDR"
printf '[LongTermKey]\nKey=00112233445566778899AABBCCDDEEFF\nAuthenticated=0\nEncSize=16\nEDiv=0\nRand=0\n' \
    >"/var/lib/bluetooth/$HCI1_ADDR/$HCI0_ADDR/info"
echo "scenario left its mess in $(elapsed) s"
