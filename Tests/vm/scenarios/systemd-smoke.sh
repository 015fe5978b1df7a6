#!/bin/bash
# SPDX-License-Identifier: MIT
# systemd-smoke (run-guest --init systemd): systemd is PID 1, dbus and bluetooth run as
# Debian's units; a gattd stand-in runs as a transient unit, its journal is read back and a
# real central checks it. Replace the stand-in with gattd's own unit when it exists.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
[ "$(cat /proc/1/comm)" = systemd ] || { echo "FAIL: PID 1 is $(cat /proc/1/comm), not systemd"; exit 1; }
for unit in dbus.service bluetooth.service; do
    state=$(systemctl is-active "$unit")
    [ "$state" = active ] || { echo "FAIL: $unit is $state"; exit 1; }
    echo "$unit active"
done
GATTD_BIN=${GATTD_BIN:-$VM/fake-gattd.py}
systemd-run --unit=gattd-standin --property=Type=exec \
    "$GATTD_BIN" --config "$VM/configs/core.json" --adapter hci0 || { echo "FAIL: systemd-run"; exit 1; }
wait_for_line "$OUT/bluetoothd.log" 'GATT application registered' 120 || exit 1
echo "gattd-standin.service $(systemctl is-active gattd-standin.service), registered ($(elapsed) s)"
journalctl -u gattd-standin.service --no-pager -o cat | grep -q '^registered' \
    || { echo "FAIL: journalctl -u gattd-standin has no 'registered' line"; exit 1; }
echo "journalctl -u gattd-standin: registered"
/usr/bin/python3 -u "$VM/on-adapter.py" hci0 /usr/share/doc/bluez-test-scripts/examples/example-advertisement \
    >"$OUT/advertisement.log" 2>&1 &
wait_for_line "$OUT/advertisement.log" '^Advertisement registered' 60 || exit 1
/usr/bin/python3 -u "$VM/central.py" gattd --config "$VM/configs/core.json" --no-long-read || exit 1
echo "scenario passed in $(elapsed) s"
