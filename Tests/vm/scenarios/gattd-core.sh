#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-core: gattd (built on the host) serves a JSON config on hci0; a real central on hci1
# checks over the emulated air that what the config says is what it sees.
# Environment (pass with run-guest --env):
#   GATTD_BIN     gattd executable (required; run-suite --gattd sets it)
#   GATTD_CONFIG  configuration (default Tests/vm/configs/core.json)
#   GATTD_CENTRAL_ARGS  extra central.py options (e.g. --no-long-read for a config
#                 without a value longer than the MTU)
#   GATTD_ADVERTISES=1  gattd advertises itself (the default when the config enables an
#                 advertisement; the central then checks it against the config); with 0 a
#                 helper advertisement (BlueZ's example-advertisement, connectable) makes
#                 hci0 connectable.
# Run bluetoothd with --main-conf Tests/vm/configs/bluetoothd-main.conf (ATT MTU 100) so
# that reading a value longer than 99 bytes needs offsets (the central says when it did).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
# gattd only (no gattctl: run-suite --stand-in gives fake-gattd.py, which has none)
[ -x "${GATTD_BIN:-}" ] || { echo "FAIL: GATTD_BIN '${GATTD_BIN:-}' missing or not executable"; exit 1; }
CONFIG=${GATTD_CONFIG:-$VM/configs/core.json}
EXAMPLES=/usr/share/doc/bluez-test-scripts/examples
[ -f "$CONFIG" ] || { echo "FAIL: config $CONFIG missing"; exit 1; }

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT

echo "starting $GATTD_BIN --config $(basename "$CONFIG") --adapter hci0"
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 >"$OUT/gattd.log" 2>&1 &
gattd=$!; pids+=("$gattd")
wait_for_line "$OUT/bluetoothd.log" 'GATT application registered' 120 || exit 1
kill -0 "$gattd" 2>/dev/null || { echo "FAIL: gattd exited"; tail "$OUT/gattd.log"; exit 1; }
echo "gattd registered its application ($(elapsed) s)"

if [ -z "${GATTD_ADVERTISES:-}" ]; then
    GATTD_ADVERTISES=$(/usr/bin/python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
print(int(any(a.get("enabled", True) for a in c.get("advertisements", []))))' "$CONFIG")
fi
advert_args=()
if [ "$GATTD_ADVERTISES" != 1 ]; then
    advert_args=(--no-advertisement)
    /usr/bin/python3 -u "$VM/on-adapter.py" hci0 "$EXAMPLES/example-advertisement" \
        >"$OUT/advertisement.log" 2>&1 &
    pids+=($!)
    wait_for_line "$OUT/advertisement.log" '^Advertisement registered' 60 || exit 1
    echo "helper advertisement on hci0 (connectable, until gattd advertises)"
fi

/usr/bin/python3 -u "$VM/central.py" gattd --config "$CONFIG" --adapter hci1 --peer "$HCI0_ADDR" \
    "${advert_args[@]}" ${GATTD_CENTRAL_ARGS:-} || exit 1

# what went over the air, from btmon's text log, for the reader: under TCG the monitor
# channel drops packets, so these counts are not checks (the central's results are).
mtu=$(grep -A1 'ATT: Exchange MTU Response' "$OUT/btmon.txt" | grep -o 'MTU: [0-9]*' | sort -u | tr '\n' ' ')
echo "btmon saw: ${mtu:-no MTU exchange}; $(grep -c 'ATT: Read Blob' "$OUT/btmon.txt") Read Blob PDUs;" \
     "$(grep -c 'Error: .*(0x0d)' "$OUT/btmon.txt") ATT 0x0D, $(grep -c 'Error: .*(0x03)' "$OUT/btmon.txt") ATT 0x03"
echo "scenario passed in $(elapsed) s"
