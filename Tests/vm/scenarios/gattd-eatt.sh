#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-eatt: EATT as Raspberry Pi OS bookworm ships it (issue 31): bluetoothd 5.66 with
# Debian 12's main.conf, which leaves [GATT] Channels at 5.66's default 3 (the ATT fixed
# channel and two EATT bearers per central), on Debian 13's 6.12 kernel, which has LE ECRED
# on (bluetooth.enable_ecred=1) as Raspberry Pi OS's 6.12 kernels do. run-suite runs it so
# (TABLE: kernel:trixie, no --main-conf). Run on another shape it says so: on a kernel with
# enable_ecred off it turns it on for itself (put back after); with -f it wants
# configs/bluetoothd-eatt.conf (Channels = 3 for releases whose default is 1).
# The central is hci1 speaking ATT itself (Tests/vm/eatt.py raw) on two ECRED bearers of
# receive MTU 64 beside the ATT fixed channel: reads of one characteristic at once, long
# reads of a handler-served value at once (gattd's per-central long-read cache), long writes
# at once (one prepare queue), notifications (socket and signal path) and indications
# gathered from all three bearers, each once.
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
if [ "$ecred_was" = Y ]; then
    echo "enable_ecred: Y as kernel $(uname -r) booted"
else
    echo Y >"$ECRED"
    echo "enable_ecred: $ecred_was as kernel $(uname -r) booted, set to $(cat "$ECRED") for this scenario (not the shipped shape)"
fi
# The main.conf bluetoothd was started with: its -f, or Debian's /etc/bluetooth/main.conf.
conf=$(tr '\0' '\n' <"/proc/$BLUETOOTHD_PID/cmdline" | sed -n '/^-f$/{n;p;}')
if [ -z "$conf" ]; then
    # As shipped: the conffile of Debian's bluez package, unchanged, sets no Channels.
    sum=$(dpkg-query -W -f='${Conffiles}\n' bluez | awk '$1 == "/etc/bluetooth/main.conf" { print $2 }')
    [ -n "$sum" ] && [ "$(md5sum </etc/bluetooth/main.conf | cut -d' ' -f1)" = "$sum" ] ||
        { echo "FAIL: /etc/bluetooth/main.conf is not the one bluez $(dpkg-query -W -f='${Version}' bluez) shipped"; exit 1; }
    ! grep -Eq '^[[:space:]]*Channels[[:space:]]*=' /etc/bluetooth/main.conf ||
        { echo "FAIL: /etc/bluetooth/main.conf sets Channels"; exit 1; }
    version=${GATTD_VM_BLUEZ:-$(sed -n 's/.*Bluetooth daemon \([0-9.]*\)$/\1/p' "$OUT/bluetoothd.log" | head -n 1)}
    case "$version" in
        5.66) ;;
        *) echo "FAIL: bluetoothd $version defaults to Channels = 1 (no EATT): run it with --main-conf configs/bluetoothd-eatt.conf"; exit 1 ;;
    esac
    echo "main.conf: /etc/bluetooth/main.conf as bluez $(dpkg-query -W -f='${Version}' bluez) shipped it (Channels unset: 3)"
else
    grep -q '^Channels = 3$' "$conf" ||
        { echo "FAIL: bluetoothd runs with -f $conf: this scenario wants bluetoothd-eatt.conf (Channels = 3) or none"; exit 1; }
    echo "main.conf: $conf (Channels = 3)"
fi

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

# The central speaks ATT itself (kernel sockets on hci1: the ATT fixed channel and two ECRED
# bearers). bluetoothd's own client as the central (eatt.py central) is not run: with 5.66 on
# both ends both adapters open EATT bearers to each other at once, and bluetoothd then takes
# responses to its own GATT clients' requests on bearers that sent none ("Received unexpected
# ATT response") and drops them, before gattd is asked anything (docs/bluez-contract.md §13).
/usr/bin/python3 -u "$VM/eatt.py" raw --peer "$HCI0_ADDR" --own "$HCI1_ADDR" --gattctl "$GATTCTL_BIN" || exit 1
echo "raw EATT central done ($(elapsed) s)"
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
# btmon decodes an ECRED PDU only when it fits one K-frame (the rest show as "malformed
# attribute packet"): of the Prepare Writes (59-byte pieces) it decoded 1 in two runs, so
# they are not required here; eatt.py checked each Prepare Write Response on its bearer.
for op in 'Read Request' 'Read Blob Request' 'Handle Value Notification' 'Handle Value Indication'; do
    grep -q "^$op=" <<<"$counts" || { echo "FAIL: btmon shows no $op on an EATT bearer"; exit 1; }
done
kill -0 "$gattd" || { echo "FAIL: gattd exited"; exit 1; }
kill -TERM "$gattd"; wait "$gattd"; rc=$?
[ $rc = 0 ] || { echo "FAIL: gattd exited $rc after SIGTERM"; exit 1; }
gattd=""
echo "gattd-eatt passed ($(elapsed) s)"
