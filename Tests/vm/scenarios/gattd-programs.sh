#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-programs: programs driving gattd, seen by a real central (direct init, one boot):
# a handler program on the gattd Python module (library_handler.py) answers a read and
# refuses a write with application error 0x81, and serves again, by itself, after gattd's
# SIGKILL and restart; `gattctl advertise set` changes the advertisement's
# data and the central's scan sees it (programs.py has the checks).
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=$VM/configs/programs.json

# The project's bus policy (gattd may call handlers), plus root owning org.gattd here.
install_gattd_policy

pids=()
trap 'kill "${pids[@]}" $(cat /tmp/gattd.pid 2>/dev/null) 2>/dev/null' EXIT
mkdir -p /var/lib/gattd-programs
start_gattd() {
    "$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir /var/lib/gattd-programs --log-level debug \
        >>"$OUT/gattd.log" 2>&1 &
    echo $! >/tmp/gattd.pid
}
# What the central runs while it stays connected: SIGKILL, start again, wait until registered.
cat >/tmp/restart-gattd <<SH
kill -KILL \$(cat /tmp/gattd.pid)
while kill -0 \$(cat /tmp/gattd.pid) 2>/dev/null; do sleep 0.1; done
echo '--- gattd started again after SIGKILL' >>"$OUT/gattd.log"
$(declare -f start_gattd wait_for_line)
CONFIG=$CONFIG GATTD_BIN=$GATTD_BIN OUT=$OUT
start_gattd
deadline=\$(( \$(date +%s) + 60 ))
until [ "\$(grep -c 'GATT application registered' "$OUT/gattd.log")" -ge 2 ]; do
    [ \$(date +%s) -lt \$deadline ] || { echo "gattd did not register again"; exit 1; }
    sleep 0.2
done
# The handler program registers again by itself (it follows gattd's bus name).
until [ "\$(grep -c '^registered' "$OUT/handler.log")" -ge 2 ]; do
    [ \$(date +%s) -lt \$deadline ] || { echo "the handler program did not register again"; exit 1; }
    sleep 0.2
done
SH
start_gattd
wait_for_line "$OUT/gattd.log" 'GATT application registered' 90 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered.*adv.id=main' 60 || exit 1
wait_for_line "$OUT/gattd.log" 'advertisement registered.*adv.id=beacon' 60 || exit 1
wait_for_line "$OUT/gattd.log" 'control API ready' 30 || exit 1
echo "gattd serves programs.json ($(elapsed) s)"
# The kernel's legacy limit is the one gattd --check applies: 31 bytes of advertising data
# go through (gattd's beacon is exactly 31, the central checks it arrives whole), 32 do not.
/usr/bin/python3 "$VM/mgmt_adv.py" 1 31 || { echo "FAIL: the kernel refused 31 bytes of advertising data"; exit 1; }
/usr/bin/python3 "$VM/mgmt_adv.py" 1 32 && { echo "FAIL: the kernel accepted 32 bytes of advertising data"; exit 1; }

PYTHONPATH=$ROOT/python /usr/bin/python3 -u "$VM/library_handler.py" >"$OUT/handler.log" 2>&1 &
pids+=($!)
wait_for_line "$OUT/handler.log" '^registered' 30 || exit 1
echo "handler program registered ($(elapsed) s)"

/usr/bin/python3 -u "$VM/programs.py" --gattctl "$GATTCTL_BIN" --adapter hci1 --peer "$HCI0_ADDR" \
    --restart "bash /tmp/restart-gattd" || exit 1
grep -q 'advertising data changed' "$OUT/gattd.log" || { echo "FAIL: gattd did not log the data change"; exit 1; }
n=$(sed '/^--- gattd started again after SIGKILL/q' "$OUT/gattd.log" | grep -c 'advertisement registered.*adv.id=main')
[ "$n" = 1 ] || { echo "FAIL: the advertisement was registered $n times; a data change must not re-register"; exit 1; }
grep -q "^write gate 05 from $HCI1_ADDR" "$OUT/handler.log" ||
    { echo "FAIL: the handler did not see the central's write from $HCI1_ADDR"; cat "$OUT/handler.log"; exit 1; }
echo "scenario passed in $(elapsed) s"
