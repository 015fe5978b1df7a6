#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-privacy: a central that uses LE privacy as a phone does (issue 31), direct init, one
# boot. The central is hci1 on the same bluetoothd with `btmgmt --index 1 privacy on IRK`
# (Tests/vm/privacy.py, its own agent); gattd serves configs/privacy.json on hci0
# (just-works, pairing window 3 s at start, bondedOnly). A `gattctl watch --json` runs
# throughout: it is the program that tracks centrals by the events' addresses.
#   1. with pairing opened for a few seconds (bondedOnly drops a stranger while it is closed):
#      first contact from an RPA, subscribe (acquireNotify), pair: address-changed RPA ->
#      identity; centrals and bonds name the identity; values over the subscription made
#      from the RPA (5.66: a value for all arrives; 5.82: a value for the central and one
#      for all vanish, and gattd closes the socket bluetoothd stopped reading, so `reply` is
#      unsubscribed and `--to IDENTITY` refused; docs/bluez-contract.md §12); a write is
#      reported with the identity; disconnect by identity.
#   then, the central away: gattd reloads without `plain`, so the attributes after it move;
#      gattd logs that the central may miss Service Changed (this central enabled it before
#      bonding, so bluetoothd keeps it under the RPA and does not send it, §12).
#   2. the window closed: it returns from a new RPA, bondedOnly keeps it, the event names
#      the identity; it sees the reloaded table (no `plain`, `reply` reads gattd's value at
#      its new handle: the BlueZ central checks the Database Hash; bluetoothd sent it no
#      Service Changed, counted from its log) and gattd logs its return; `reply` is not
#      subscribed until it subscribes; a value `--to IDENTITY` reaches it (5.82; 5.66 shares
#      one socket: refused as such, never "not subscribed", and a value for all reaches it);
#      after it unsubscribes, `reply` is unsubscribed; an encrypted read needs no new pairing.
#   3. the central is reset: it forgets gattd, takes a new IRK (same identity) and pairs
#      again while a window is open; bluetoothd keeps two objects with the identity
#      (bluez/bluez #1095): gattctl bonds lists it once (bonded, connected), gattd logs the
#      two objects and removes neither, the encrypted read and a value for it alone (as
#      in 2) work over the new keys. Before 5.80 (docs/bluez-contract.md §12) bluetoothd
#      holds notifications for the older object, so only gattd's writing of the value for
#      all is checked there, and the newer object keeps `Connected` after the link ends, so
#      the central leaves on its own.
#   4. bluetoothd restarts: one object, dev_<identity>, holding the newer bond: `reply` is
#      not subscribed until the central (new IRK) subscribes again, then the same as 2
#      through a new socket, and no new pairing.
#   5. gattd forgets the bond (every object of the identity): the private central connects
#      and is dropped.
# Every value the central waits for differs from the one gattd holds (gattd notifies nobody
# of a control set that leaves the value unchanged: the restart phase, now 4, once repeated
# phase 2's value and failed on 5.66), and a value for all must show as the watch's `changed`
# event first.
# bluetoothd runs with Channels = 1 (configs/bluetoothd-privacy.conf). Times (whole run on
# the host, run-suite's figure): passed twice in a row on both, 5.66 66 and 74 s, 5.82 69 and
# 81 s (the whole `run-suite --bluez 5.66,5.82 gattd-privacy` 162 and 183 s, other helpers
# working on the 2 cores). With phase 3 (the re-pair, issue 31), passed twice in a row on
# both: 5.66 54 and 52 s, 5.82 51 and 52 s (scenario.log 47.8, 46.7, 44.9, 45.7 s; the whole
# run-suite 127 and 125 s); phase 3 itself 9.5 and 11.5 s on 5.66, 11.9 and 8.8 s on 5.82
# (13 and 18 s on 5.82 in earlier runs, a scan started again up to 7 times). With the values
# over the pre-bond subscription and the reload while away (issue 31, item 2), four helpers'
# guests queued on the 2 cores: main's scenario 61 s on 5.66 and 61 s on 5.82, this one 88
# and 91 s on 5.66, 66 and 81 s on 5.82 (all passing); phase 1 +4 to +6 s (on 5.82 gattd
# needed two 2 s checks, 5 s ones since, to close the socket bluetoothd stopped reading), phase 2 with the
# reload +4 to +7 s, phases 3-5 the same work, slower under that load.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
install_gattd_policy

gattd="" pids=()
cleanup() { kill "${pids[@]}" $gattd 2>/dev/null; }
trap cleanup EXIT
STATE=/var/lib/gattd-privacy
mkdir -p "$STATE"
CONFIG=$STATE/privacy.json
cp "$VM/configs/privacy.json" "$CONFIG"
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir "$STATE" --log-level debug \
    >>"$OUT/gattd.log" 2>&1 &
gattd=$!
wait_for_line "$OUT/gattd.log" 'GATT application registered' 60 || exit 1
wait_for_line "$OUT/gattd.log" 'pairing agent registered' 30 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered' 30 || exit 1
"$GATTCTL_BIN" watch --json >"$OUT/watch.json" 2>"$OUT/watch.err" & pids+=($!)
wait_for_line "$OUT/watch.err" '^watching' 30 || exit 1

# 5.79 and later send a socket's values to its central alone (docs/bluez-contract.md, "Sockets").
version=${GATTD_VM_BLUEZ:-$(sed -n 's/.*Bluetooth daemon \([0-9.]*\)$/\1/p' "$OUT/bluetoothd.log" | head -n 1)}
sockets=()
awk -v v="$version" 'BEGIN { split(v, p, "."); exit !(p[1] > 5 || (p[1] == 5 && p[2] >= 79)) }' && sockets=(--targeted)
# Up to 5.68 one notify socket per characteristic serves every central (§6, "Sockets").
awk -v v="$version" 'BEGIN { split(v, p, "."); exit !(p[1] == 5 && p[2] < 69) }' && sockets=(--shared)
# Before 5.80 a lookup by address finds the oldest object with it (bluez/bluez #1095, fixed by
# putting new objects first): after a re-pair the keys and the link's end go to the older.
older=()
awk -v v="$version" 'BEGIN { split(v, p, "."); exit !(p[1] == 5 && p[2] < 80) }' && older=(--older-first)
echo "bluetoothd $version ${sockets[*]:-(per-central sockets)} ${older[*]:-}"
central() {
    /usr/bin/python3 -u "$VM/privacy.py" "$@" --adapter hci1 --peer "$HCI0_ADDR" --identity "$HCI1_ADDR" \
        --gattctl "$GATTCTL_BIN" --watch "$OUT/watch.json" --gattd-log "$OUT/gattd.log"
}
kill -0 "$gattd" || { echo "FAIL: gattd exited"; exit 1; }
# The first window (3 s from the start) must be closed before the central looks for gattd.
deadline=$(( $(date +%s) + $(bound 30) ))
until "$GATTCTL_BIN" pairing | grep -q ': closed'; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: the first pairing window did not close"; exit 1; }
    sleep 0.5
done

echo "== 1. first contact from an RPA, subscribe, bond, address change, write, disconnect"
central first --window "$(bound 20)" "${sockets[@]}" || exit 1
echo "phase 1 done ($(elapsed) s)"
echo "== reload while it is away: the definition without plain, so the attributes after it move"
handles() { "$GATTCTL_BIN" list --json | /usr/bin/python3 -c 'import json, sys
print(" ".join("%s=%s" % (c["id"], c.get("handle")) for c in map(json.loads, filter(str.strip, sys.stdin))))'; }
echo "handles before: $(handles)"
/usr/bin/python3 - "$VM/configs/privacy.json" "$CONFIG" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c['services'][0]['characteristics'] = [x for x in c['services'][0]['characteristics'] if x['id'] != 'plain']
json.dump(c, open(sys.argv[2], 'w'), indent=2)
PY
registered=$(count "$OUT/gattd.log" 'GATT application registered')
kill -HUP "$gattd"
wait_count "$OUT/gattd.log" 'GATT application registered' $((registered + 1)) 60 || exit 1
echo "handles after: $(handles)"
grep -E "centrals that bonded over a private address are away.*$HCI1_ADDR" "$OUT/gattd.log" | sed 's/^/gattd: /' | grep . ||
    { echo "FAIL: gattd did not name $HCI1_ADDR as a central away that may miss Service Changed"; exit 1; }
bt_mark=$(wc -l <"$OUT/bluetoothd.log")
echo "== 2. the window closed: back from a new RPA (bondedOnly), targeted value, encrypted read without pairing"
central return "${sockets[@]}" || exit 1
# What bluetoothd (both ends here) logged since the reload: it sent the returning central
# no Service Changed, and the central found the change by the Database Hash it reads on
# connecting (docs/bluez-contract.md §12).
echo "bluetoothd since the reload: $(tail -n +"$bt_mark" "$OUT/bluetoothd.log" | grep -c 'Service Changed received') Service Changed received, $(tail -n +"$bt_mark" "$OUT/bluetoothd.log" | grep -c 'DB Hash value:') Database Hash changed"
echo "phase 2 done ($(elapsed) s)"

echo "== 3. the central is reset: a new IRK, the same identity, paired again in a new window"
central repair --window "$(bound 20)" "${sockets[@]}" "${older[@]}" || exit 1
echo "phase 3 done ($(elapsed) s)"

echo "== 4. bluetoothd restarts: one object, dev_<identity>, with the newer bond"
mapfile -d '' bt_argv <"/proc/$BLUETOOTHD_PID/cmdline"
kill -TERM "$BLUETOOTHD_PID"
for _ in $(seq 100); do kill -0 "$BLUETOOTHD_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$BLUETOOTHD_PID" 2>/dev/null && { echo "FAIL: bluetoothd did not stop"; exit 1; }
wait_for_line "$OUT/gattd.log" 'org.bluez left the bus' 30 || exit 1
registered=$(count "$OUT/gattd.log" 'GATT application registered')
agents=$(count "$OUT/gattd.log" 'pairing agent registered capability')
"${bt_argv[@]}" >>"$OUT/bluetoothd.log" 2>&1 &
BLUETOOTHD_PID=$!
pids+=($BLUETOOTHD_PID)
wait_count "$OUT/gattd.log" 'GATT application registered' $((registered + 1)) 60 || exit 1
wait_count "$OUT/gattd.log" 'pairing agent registered capability' $((agents + 1)) 30 || exit 1
central restarted "${sockets[@]}" || exit 1
echo "phase 4 done ($(elapsed) s)"

echo "== 5. gattd forgets the bond: the private central is dropped (bondedOnly, pairing closed)"
"$GATTCTL_BIN" bonds remove "$HCI1_ADDR" | grep -qx "$HCI1_ADDR: removed" || { echo "FAIL: gattctl bonds remove"; exit 1; }
"$GATTCTL_BIN" bonds | grep -q "^$HCI1_ADDR " && { echo "FAIL: a bond with $HCI1_ADDR is left: $("$GATTCTL_BIN" bonds)"; exit 1; }
central stranger || exit 1
grep -E 'disconnecting a central that is not bonded' "$OUT/gattd.log" | tail -n 1 | sed 's/^/gattd: /'
echo "phase 5 done ($(elapsed) s)"
kill -TERM "$gattd"; wait "$gattd"; rc=$?
[ $rc = 0 ] || { echo "FAIL: gattd exited $rc after SIGTERM"; exit 1; }
gattd=""
echo "gattd-privacy passed ($(elapsed) s)"
