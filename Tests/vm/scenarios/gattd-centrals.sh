#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-centrals: two real centrals on gattd at once (direct init, one boot, four btvirt
# controllers: hci0 gattd, hci1 and hci2 centrals, hci3 only holds a link of hci2's;
# configs/centrals.json, bluetoothd at ATT MTU 100). Both connect, subscribe at the same
# moment and get every value once and in order on the socket and the signal path;
# `gattctl centrals`, a value to one central (`gattctl set --to`, refused on 5.66),
# interleaved long reads of a handler's value, `gattctl disconnect`, bondedOnly dropping a
# stranger while a bonded central is served; checks in centrals.py.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
[ -n "${HCI2_ADDR:-}" ] && [ -n "${HCI3_ADDR:-}" ] || { echo "FAIL: no hci2/hci3 (run-guest --controllers 4)"; exit 1; }
install_gattd_policy
mkdir -p /var/lib/gattd-centrals
"$GATTD_BIN" --config "$VM/configs/centrals.json" --adapter hci0 --state-dir /var/lib/gattd-centrals \
    --log-level debug >>"$OUT/gattd.log" 2>&1 &
pid=$!
hpid=
trap 'kill $pid $hpid 2>/dev/null' EXIT
wait_for_line "$OUT/gattd.log" 'GATT application registered' 90 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered.*adv.id=main' 60 || exit 1
/usr/bin/python3 -u "$ROOT/Tests/integration/handler_program.py" --ids long --fill long=300 \
    >"$OUT/handler.log" 2>&1 &
hpid=$!
wait_for_line "$OUT/handler.log" '^registered' 30 || exit 1
echo "gattd serves centrals.json, the handler answers long ($(elapsed) s)"
/usr/bin/python3 -u "$VM/centrals.py" --adapter hci1 --peer "$HCI0_ADDR" --gattctl "$GATTCTL_BIN" \
    --gattd-log "$OUT/gattd.log" --handler-log "$OUT/handler.log" --bluez "${GATTD_VM_BLUEZ:-5.66}" \
    --central1 "$HCI1_ADDR" --central2 "$HCI2_ADDR" --holder "$HCI3_ADDR" || exit 1
kill -0 $pid || { echo "FAIL: gattd exited"; exit 1; }
echo "scenario passed in $(elapsed) s"
