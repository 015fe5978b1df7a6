#!/bin/bash
# SPDX-License-Identifier: MIT
# bench-channel-rate [MTU]: bytes per second from gattd to one central over an L2CAP
# channel against gattd's fastest notification path, at the same MTU (default 247), in one
# boot (BENCHMARKS.md, "L2CAP channels"; issue 32). A bench, in no set of run-suite: run it
# with bench/channel-rate.batch (run-guest --batch). The kernel-socket centrals of
# channel_rate.py on hci1, one after another, each for RATE_SECONDS (default 8) from the
# first value that arrives:
#   1. notify: a raw ATT bearer at ATT MTU MTU subscribed to `stream` (acquireNotify, a
#      1 ms counter padded to MTU - 3 bytes, notifyIntervalMs 1: gattd's fastest
#      notification path, one value a millisecond at most);
#   2. relayed: channel `relayed` (PSM 0x90) with receive MTU MTU, whose program
#      (dd if=/dev/zero bs=MTU) sends full SDUs as fast as the channel takes them, relayed
#      by gattd;
#   3. passed: channel `passed` (PSM 0x91) taken by `gattctl channel passed -- dd ...`:
#      gattd passed the descriptor, out of the data path.
# Each prints a RATE line (rates.txt): bytes/s, and gattd's and bluetoothd's CPU per MiB.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN, RATE_SECONDS.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
MTU=${1:-247}
SECS=${RATE_SECONDS:-8}
[[ "$MTU" =~ ^[0-9]+$ ]] && [ "$MTU" -ge 23 ] && [ "$MTU" -le 515 ] \
    || { echo "FAIL: MTU $MTU: give 23...515 (a notification carries MTU - 3 bytes, at most 512)"; exit 1; }
CONFIG=/tmp/bench-channel-rate.json
STREAM=12345678-1234-5678-1234-56789abcd201
/usr/bin/python3 - "$MTU" >"$CONFIG" <<'PY' || exit 1
import json, sys
mtu = int(sys.argv[1])
pad = {"hex": "00" * (mtu - 3 - 4)}
print(json.dumps({
    "version": 1, "alias": "gattd-rate",
    "services": [
        {"id": "rate", "uuid": "12345678-1234-5678-1234-56789abcd200", "characteristics": [
            {"id": "stream", "uuid": "12345678-1234-5678-1234-56789abcd201", "flags": ["read", "notify"],
             "value": {"hex": "00" * (mtu - 3)}, "minLength": mtu - 3, "maxLength": mtu - 3, "persist": False,
             "acquireNotify": True, "notifyIntervalMs": 1,
             "update": {"everyMs": 1, "source": {"counter": {"start": 0, "step": 1, "max": 4294967295}},
                        "encode": [{"uint32": "$"}, pad]}}]},
        {"id": "relayed", "uuid": "12345678-1234-5678-1234-56789abcd202"},
        {"id": "passed", "uuid": "12345678-1234-5678-1234-56789abcd203"}],
    "advertisements": [{"id": "main", "type": "peripheral", "localName": "gattd-rate"}],
    "channels": [
        {"id": "relayed", "psm": "0x90", "service": "relayed",
         "program": {"argv": ["dd", "if=/dev/zero", "bs=%d" % mtu, "status=none"]}},
        {"id": "passed", "psm": "0x91", "service": "passed"}]}, indent=1))
PY
cp "$CONFIG" "$OUT/config.json"

install_gattd_policy
mkdir -p /var/lib/gattd-rate
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir /var/lib/gattd-rate >>"$OUT/gattd.log" 2>&1 &
gattd=$!
taker=
trap 'kill $gattd $taker 2>/dev/null' EXIT
wait_for_line "$OUT/gattd.log" 'GATT application registered' 90 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered.*adv.id=main' 60 || exit 1
# the program channel listens at once, the passed one once its taker registers
wait_count "$OUT/gattd.log" 'channel listening' 1 30 || exit 1
"$GATTCTL_BIN" channel passed -- dd if=/dev/zero "bs=$MTU" status=none >"$OUT/taker.log" 2>&1 &
taker=$!
wait_for_line "$OUT/taker.log" '^taking channel passed' 30 || exit 1
echo "gattd serves the rate definition at MTU $MTU ($(elapsed) s); $(nproc) CPUs, $(uname -r)"

# rate LABEL COMMAND...: one channel_rate.py measurement; its RATE line, labelled, in rates.txt
rate() {
    local label=$1; shift
    /usr/bin/python3 -u "$VM/channel_rate.py" --own "$HCI1_ADDR" --peer "$HCI0_ADDR" --gattd-pid "$gattd" \
        --bluetoothd-pid "$BLUETOOTHD_PID" "$@" >"$OUT/rate-$label.out" 2>&1
    local rc=$?
    cat "$OUT/rate-$label.out"
    grep '^RATE ' "$OUT/rate-$label.out" | sed "s/^RATE /RATE which=$label /" >>"$OUT/rates.txt"
    return $rc
}
# A path that fails is reported and the others are still measured; the scenario fails at the end.
failed=
echo "== notifications (acquireNotify, 1 ms), ATT MTU $MTU"
rate notify notify --uuid "$STREAM" --mtu "$MTU" --seconds "$SECS" || failed+=" notify"
echo "== channel relayed through gattd (dd bs=$MTU), MTU $MTU"
rate relayed channel --psm 0x90 --mtu "$MTU" --seconds "$SECS" || failed+=" relayed"
echo "== channel passed to gattctl channel (dd bs=$MTU), MTU $MTU"
rate passed channel --psm 0x91 --mtu "$MTU" --seconds "$SECS" || failed+=" passed"
kill -0 $gattd || { echo "FAIL: gattd exited"; exit 1; }
echo "== rates at MTU $MTU (bytes/s to the central; CPU ms per MiB)"
awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       if (v["which"] == "notify") base = v["bytes_per_s"]
       printf "%-8s %9.0f B/s  %5.2fx notify  gattd %6s  bluetoothd %6s  gaps %s\n", v["which"], v["bytes_per_s"],
           base ? v["bytes_per_s"] / base : 0, v["gattd_cpu_ms_per_mib"], v["bluetoothd_cpu_ms_per_mib"], v["gaps"] }' \
    "$OUT/rates.txt" 2>/dev/null
if [ -n "$failed" ]; then
    echo "FAIL: not measured:$failed (kernel: $(dmesg | grep -i -E 'l2cap|credits|wrong link' | tail -3 | tr '\n' ' '))"
    exit 1
fi
echo "scenario passed in $(elapsed) s"
