#!/bin/bash
# SPDX-License-Identifier: MIT
# reset-clean: run after reset-dirty in the same boot (run-suite --stand-in): nothing of it
# is left. Fails on any leftover.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
fail=0
left() { echo "FAIL: left over from reset-dirty: $*"; fail=1; }
for f in /tmp/gattd-vm-dirty /tmp/gattd-vm-dirty-bluetoothd /var/lib/gattd-vm-dirty /run/gattd-vm-dirty \
         /etc/dbus-1/system.d/gattd-vm-dirty.conf; do
    [ ! -e "$f" ] || left "$f"
done
stray=$(pgrep -f '^sleep 100000$') && left "process $stray (sleep 100000)"
alias=$(dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Get \
    string:org.bluez.Adapter1 string:Alias | sed -n 's/.*string "\(.*\)"/\1/p')
[ "$alias" != gattd-vm-dirty ] || left "hci0's Alias $alias"
echo "hci0 Alias: $alias"
[ "$(pgrep -c -x bluetoothd)" -le 1 ] || left "$(pgrep -c -x bluetoothd) bluetoothd processes"
[ ! -e "/var/lib/bluetooth/$HCI1_ADDR/$HCI0_ADDR" ] || left "hci1's bond with hci0 in /var/lib/bluetooth"
grep -q "load_ltks() hci1 keys 0" "$OUT/bluetoothd.log" || left "bluetoothd loaded keys: $(grep -o 'load_ltks() hci1 keys [0-9]*' "$OUT/bluetoothd.log")"
[ "$fail" = 0 ] || exit 1
echo "nothing of reset-dirty is left ($(elapsed) s)"
