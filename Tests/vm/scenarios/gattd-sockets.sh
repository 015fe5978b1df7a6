#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-sockets: the socket path with the real bluetoothd (direct init, one boot):
# AcquireNotify notifications and AcquireWrite writes between gattd and a real central,
# each path's rate and gattd's CPU per notification printed (sockets.py has the checks).
# Environment (run-guest --env): GATTD_BIN.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
OUT=${GATTD_VM_OUT:?}
ROOT=$(cd "$VM/../.." && pwd)
GATTD_BIN=${GATTD_BIN:-$ROOT/.build/debug/gattd}
CONFIG=$VM/configs/sockets.json
[ -x "$GATTD_BIN" ] || { echo "FAIL: $GATTD_BIN missing or not executable"; exit 1; }

install_gattd_policy
mkdir -p /var/lib/gattd-sockets
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir /var/lib/gattd-sockets >>"$OUT/gattd.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
wait_for_line "$OUT/gattd.log" 'GATT application registered' 90 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered.*adv.id=main' 60 || exit 1
echo "gattd serves sockets.json ($(elapsed) s)"
/usr/bin/python3 -u "$VM/sockets.py" --adapter hci1 --peer "$HCI0_ADDR" --gattd-log "$OUT/gattd.log" \
    --gattd-pid $pid || exit 1
kill -0 $pid || { echo "FAIL: gattd exited"; exit 1; }
echo "scenario passed in $(elapsed) s"
