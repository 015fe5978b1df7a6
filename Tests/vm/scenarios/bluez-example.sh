#!/bin/bash
# SPDX-License-Identifier: MIT
# bluez-example: proves the chain (guest, controllers, bluetoothd, central) with BlueZ's own
# example GATT server and advertisement on hci0, run from where Debian installs them.
set -uo pipefail
EXAMPLES=/usr/share/doc/bluez-test-scripts/examples
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
for f in example-gatt-server example-advertisement; do
    [ -f "$EXAMPLES/$f" ] || { echo "FAIL: $EXAMPLES/$f missing (package bluez-test-scripts)"; exit 1; }
done
/usr/bin/python3 -u "$VM/on-adapter.py" hci0 "$EXAMPLES/example-gatt-server" >"$GATTD_VM_OUT/server.log" 2>&1 &
server=$!
/usr/bin/python3 -u "$VM/on-adapter.py" hci0 "$EXAMPLES/example-advertisement" >"$GATTD_VM_OUT/advertisement.log" 2>&1 &
adv=$!
wait_for_line "$GATTD_VM_OUT/server.log" 'GATT application registered' 60 || exit 1
wait_for_line "$GATTD_VM_OUT/advertisement.log" '^Advertisement registered' 60 || exit 1
echo "example server and advertisement registered on hci0 ($(elapsed) s)"
/usr/bin/python3 -u "$VM/central.py" bluez-example --adapter hci1 --peer "$HCI0_ADDR"
rc=$?
kill "$server" "$adv" 2>/dev/null
exit $rc
