#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-sockets: the socket path with the real bluetoothd (direct init, one boot):
# AcquireNotify notifications and AcquireWrite writes between gattd and a real central,
# each path's rate and gattd's CPU per notification printed (sockets.py has the checks),
# and the control API's per-central events (gattctl watch) naming the real central.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=$VM/configs/sockets.json

install_gattd_policy
mkdir -p /var/lib/gattd-sockets
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir /var/lib/gattd-sockets >>"$OUT/gattd.log" 2>&1 &
pid=$!
wpid=
trap 'kill $pid $wpid 2>/dev/null' EXIT
wait_for_line "$OUT/gattd.log" 'GATT application registered' 90 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered.*adv.id=main' 60 || exit 1
echo "gattd serves sockets.json ($(elapsed) s)"
"$GATTCTL_BIN" watch --json >"$OUT/watch.jsonl" 2>"$OUT/watch.err" &
wpid=$!
wait_for_line "$OUT/watch.err" 'watching' 30 || exit 1
/usr/bin/python3 -u "$VM/sockets.py" --adapter hci1 --peer "$HCI0_ADDR" --gattd-log "$OUT/gattd.log" \
    --gattd-pid $pid || exit 1
kill -0 $pid || { echo "FAIL: gattd exited"; exit 1; }
# The real bluetoothd named the central in AcquireNotify: the program heard which one came
# and went (CentralSubscriptionChanged), inside the characteristic's own events.
kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
/usr/bin/python3 - "$OUT/watch.jsonl" <<'PY' || exit 1
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
stream = [e for e in events if e.get('id') == 'stream' and 'subscribed' in e['event']]
kinds = [e['event'] for e in stream]
if kinds[:4] != ['subscribed', 'central-subscribed', 'central-unsubscribed', 'unsubscribed']:
    sys.exit('FAIL: gattctl watch saw %s for stream, expected subscribed, central-subscribed, '
             'central-unsubscribed, unsubscribed' % kinds)
devices = {e['device'] for e in stream if e['event'].startswith('central-')}
if len(devices) != 1 or not next(iter(devices)).startswith('/org/bluez/hci0/dev_'):
    sys.exit('FAIL: the central events name %s, expected one device under /org/bluez/hci0' % devices)
print('control events: central-subscribed and central-unsubscribed device=%s' % next(iter(devices)))
PY
echo "scenario passed in $(elapsed) s"
