#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-eatt: EATT as Debian 12 and Raspberry Pi OS bookworm ship it (issue 31): bluetoothd
# with 5.66's default Channels = 3 (configs/bluetoothd-eatt.conf; later releases default to
# 1) and a smaller MTU, and
# the kernel's LE ECRED on (bluetooth.enable_ecred, which the 6.1 kernel leaves off; set
# here for this scenario and put back after). The central is hci1 of the same bluetoothd,
# EATT-capable too (Tests/vm/eatt.py): concurrent reads (long, handler-served), long
# writes, notifications (socket and signal path) and indications, over the EATT bearers.
# EATT in use is proven from btmon: the Enhanced Credit Based connections succeeded and
# ATT requests, notifications and indications went over PSM 39 channels.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
install_gattd_policy

ECRED=/sys/module/bluetooth/parameters/enable_ecred
[ -w "$ECRED" ] || { echo "FAIL: no writable $ECRED in this kernel"; exit 1; }
ecred_was=$(cat "$ECRED")
gattd="" pids=()
cleanup() { kill "${pids[@]}" $gattd 2>/dev/null; echo "$ecred_was" >"$ECRED"; }
trap cleanup EXIT
echo Y >"$ECRED"
echo "enable_ecred: $ecred_was -> $(cat "$ECRED")"
# The main.conf bluetoothd was started with (its -f).
conf=$(tr '\0' '\n' <"/proc/$BLUETOOTHD_PID/cmdline" | sed -n '/^-f$/{n;p;}')
grep -q '^ExchangeMTU = 100$' "${conf:-/nonexistent}" && grep -q '^Channels = 3$' "$conf" ||
    { echo "FAIL: this scenario wants bluetoothd-eatt.conf (Channels = 3, 5.66's default)"; exit 1; }

STATE=/var/lib/gattd-eatt
mkdir -p "$STATE"
"$GATTD_BIN" --config "$VM/configs/eatt.json" --adapter hci0 --state-dir "$STATE" --log-level debug \
    >>"$OUT/gattd.log" 2>&1 &
gattd=$!
wait_for_line "$OUT/gattd.log" 'GATT application registered' 60 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered' 30 || exit 1
wait_for_line "$OUT/gattd.log" 'control API ready' 30 || exit 1
/usr/bin/python3 -u "$VM/eatt.py" handler --python "$ROOT/python" >"$OUT/handler.log" 2>&1 & pids+=($!)
wait_for_line "$OUT/handler.log" '^registered' 30 || exit 1
echo "gattd serves eatt.json, the handler program is registered ($(elapsed) s)"

# First a central that speaks ATT itself on two ECRED bearers (concurrent long reads of one
# handler-served value), then bluetoothd's own client as the central.
/usr/bin/python3 -u "$VM/eatt.py" raw --peer "$HCI0_ADDR" --own "$HCI1_ADDR" || exit 1
echo "raw EATT central done ($(elapsed) s)"
/usr/bin/python3 -u "$VM/eatt.py" central --adapter hci1 --peer "$HCI0_ADDR" --own "$HCI1_ADDR" --gattctl "$GATTCTL_BIN" \
    --bluetoothd-log "$OUT/bluetoothd.log" || exit 1
sed 's/^/handler: /' "$OUT/handler.log"

# EATT was in use: btmon saw Enhanced Credit connections succeed and ATT traffic on PSM 39
# channels in that mode (without enable_ecred 5.66 falls back to LE Flow Control bearers).
ecred=$(awk '/Enhanced Credit Connection Response/ { r = 1; next }
             r && /Result:/ { sub(/^ */, ""); print; r = 0 }' "$OUT/btmon.txt" | sort | uniq -c)
echo "Enhanced Credit Connection Responses (btmon):"; sed 's/^/  /' <<<"$ecred"
grep -q 'Connection successful' <<<"$ecred" || { echo "FAIL: btmon shows no successful ECRED connection"; exit 1; }
counts=$(awk '/PSM 39 mode Enhanced Credit/ { eatt = 1; next }
              /ATT: / { if (eatt) { sub(/.*ATT: /, ""); sub(/ \(0x.*/, ""); n[$0]++ } eatt = 0; next }
              { eatt = 0 } END { for (k in n) printf "%s=%d\n", k, n[k] }' "$OUT/btmon.txt" | sort)
echo "ATT PDUs on EATT bearers in Enhanced Credit mode (btmon):"; sed 's/^/  /' <<<"$counts"
grep -o 'PSM 39 mode [A-Za-z ]*' "$OUT/btmon.txt" | sort | uniq -c | sed 's/^/  btmon: /'
for op in 'Read Request' 'Read Blob Request' 'Prepare Write Request' 'Handle Value Notification' 'Handle Value Indication'; do
    grep -q "^$op=" <<<"$counts" || { echo "FAIL: btmon shows no $op on an EATT bearer"; exit 1; }
done
kill -0 "$gattd" || { echo "FAIL: gattd exited"; exit 1; }
kill -TERM "$gattd"; wait "$gattd"; rc=$?
[ $rc = 0 ] || { echo "FAIL: gattd exited $rc after SIGTERM"; exit 1; }
gattd=""
echo "gattd-eatt passed ($(elapsed) s)"
