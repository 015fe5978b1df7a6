#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-bumble: a central that is not BlueZ, and that uses LE privacy as a phone does.
# Google's Bumble (pinned in Tests/vm/bumble-requirements.txt, a venv prepared by
# Tests/vm/prepare-bumble) runs its own host stack on hci1 through the kernel's HCI user
# channel, after the scenario has taken hci1 from bluetoothd (powered off over D-Bus: the
# user channel is refused while the controller is up, and binding it removes hci1 from
# bluetoothd). gattd serves configs/bumble.json on hci0 through the real bluetoothd
# (just-works, a pairing window of 1 s at start, bondedOnly, an `encrypt` L2CAP channel
# relayed through cat). A `gattctl watch --json` runs throughout (again after gattd's
# restart): the program that tracks centrals by the events' addresses. bumble_central.py:
# scan, open the pairing window, connect from a resolvable private address, MTU 247,
# discovery, the encrypt-read values refused, just-works pairing with a bond and the IRK
# given (address-changed RPA -> identity), reads, a long write (Prepare/Execute Write)
# reported by the identity, notifications, the channel opened on the PSM read from its
# characteristic with 256 KiB echoed each way and closed, the window closed, disconnect;
# then gattd restarts with the same definition and state, and once its window is closed
# Bumble returns from a new private address (bondedOnly keeps it, announced by the
# identity), encrypts with its bond when gattd's bluetoothd asks (SMP Security Request;
# docs/bluez-contract.md §11 says why not at once), and reads by the handles it discovered
# before, without rediscovery: each characteristic must give its own value.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN),
# BUMBLE_PYTHON (the venv's python; run-suite sets it from prepare-bumble --path).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
[ -n "${BUMBLE_PYTHON:-}" ] && [ -x "$BUMBLE_PYTHON" ] \
    || { echo "FAIL: BUMBLE_PYTHON '${BUMBLE_PYTHON:-}' is not an executable (Tests/vm/prepare-bumble prints it)"; exit 1; }
CONFIG=$VM/configs/bumble.json
STATE=/tmp/gattd-bumble-state
mkdir -p "$STATE"
install_gattd_policy

pids=()
trap 'kill "${pids[@]}" "${gattd:-}" 2>/dev/null; exec 3>&-' EXIT
start_gattd() {
    "$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir "$STATE" --log-level debug >>"$OUT/gattd.log" 2>&1 &
    gattd=$!
    wait_count "$OUT/gattd.log" 'GATT application registered' "$1" 90 || exit 1
    wait_count "$OUT/gattd.log" 'advertisement registered' "$1" 60 || exit 1
    wait_count "$OUT/gattd.log" 'control API ready' "$1" 30 || exit 1
    kill -0 "$gattd" 2>/dev/null || { echo "FAIL: gattd exited"; tail "$OUT/gattd.log"; exit 1; }
    # The watch ends when gattd leaves the bus; each gattd gets one, appending to one file.
    "$GATTCTL_BIN" watch --json >>"$OUT/watch.json" 2>"$OUT/watch-$1.err" &
    pids+=($!)
    wait_for_line "$OUT/watch-$1.err" '^watching' 30 || exit 1
}
start_gattd 1
echo "gattd serves bumble.json on hci0 ($(elapsed) s)"

# hci1 to Bumble: down first (the kernel refuses the user channel of a controller that is up).
dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci1 org.freedesktop.DBus.Properties.Set \
    string:org.bluez.Adapter1 string:Powered variant:boolean:false >/dev/null \
    || { echo "FAIL: could not power hci1 off through bluetoothd"; exit 1; }
hci1_down() { hciconfig hci1 | grep -q DOWN; }
deadline=$(( $(date +%s) + 20 ))
until hci1_down; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: expected hci1 DOWN after Powered=false, got:"; hciconfig hci1; exit 1; }
    sleep 0.2
done
echo "hci1 is down; Bumble takes it over the HCI user channel ($(elapsed) s)"

fifo=$(mktemp -u /tmp/gattd-bumble-go.XXXXXX)
mkfifo "$fifo"
"$BUMBLE_PYTHON" -u "$VM/bumble_central.py" --transport hci-socket:1 --peer "$HCI0_ADDR" --config "$CONFIG" \
    --gattctl "$GATTCTL_BIN" --watch "$OUT/watch.json" --gattd-log "$OUT/gattd.log" --debug-log "$OUT/bumble-debug.log" <"$fifo" >"$OUT/bumble.log" 2>&1 &
bumble=$!
pids+=("$bumble")
exec 3>"$fifo"
rm -f "$fifo"
# bumble_central_done: ends the scenario when Bumble exited (with its FAIL line) or timed out.
until grep -q -e '^phase 1 done' "$OUT/bumble.log"; do
    if ! kill -0 "$bumble" 2>/dev/null; then
        wait "$bumble"; rc=$?
        echo "Bumble phase 1 (exit $rc):"; sed 's/^/    /' "$OUT/bumble.log"
        grep -q '^FAIL' "$OUT/bumble.log" || echo "FAIL: Bumble's central exited with $rc before phase 1 was done"
        exit 1
    fi
    [ "$(elapsed | cut -d. -f1)" -lt 400 ] || { echo "FAIL: Bumble's phase 1 not done after 400 s"; cat "$OUT/bumble.log"; exit 1; }
    sleep 0.2
done
grep -v '^DEBUG\|^INFO\|^WARNING' "$OUT/bumble.log"
echo "Bumble phase 1 done ($(elapsed) s)"

echo "== gattd restarts with the same definition; Bumble keeps the handles it discovered"
kill -TERM "$gattd"; wait "$gattd"; rc=$?
[ $rc = 0 ] || { echo "FAIL: expected gattd to exit 0 on SIGTERM, got $rc"; exit 1; }
start_gattd 2
# The window gattd opens at its start (pairableSeconds 1) must be closed before Bumble returns.
deadline=$(( $(date +%s) + $(bound 30) ))
until "$GATTCTL_BIN" pairing | grep -q ': closed'; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: expected gattd's pairing window closed, got: $("$GATTCTL_BIN" pairing)"; exit 1; }
    sleep 0.2
done
echo "gattd serves again, pairing closed ($(elapsed) s)"
echo go >&3
wait "$bumble"; rc=$?
sed -n '/^phase 1 done/,$p' "$OUT/bumble.log" | grep -v '^phase 1 done\|^DEBUG\|^INFO\|^WARNING'
[ $rc = 0 ] || { grep -q '^FAIL' "$OUT/bumble.log" || echo "FAIL: Bumble's central exited with $rc in phase 2"; exit 1; }
echo "scenario passed in $(elapsed) s"
