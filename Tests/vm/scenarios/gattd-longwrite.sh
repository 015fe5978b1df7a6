#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-longwrite: long and reliable writes through the real bluetoothd (direct init, one
# boot, configs/longwrite.json, bluetoothd with configs/bluetoothd-mtu48.conf, which
# run-suite passes as --main-conf). 200 bytes, and 201 (over maxLength), to a plain
# characteristic, one with a deciding onWrite hook and one served by a handler program
# (Tests/integration/handler_program.py): at MTU 48 from bluetoothd's own central
# (longwrite.py), at MTU 23 from a central that speaks ATT itself (longwrite_att.py: a phone's
# Prepare/Execute Write, cancel, reliable writes across two characteristics). MTU 23 cannot
# come from bluetoothd's ExchangeMTU: below 48 bluetoothd 5.66 fails to set up its ATT
# listening socket (setsockopt L2CAP_OPTIONS: EINVAL) and registers no adapter.
# Checked here: the hook and the handler each saw one call per long write, at offset 0 with
# the whole value (bluetoothd joins the prepared pieces before it calls WriteValue), and none
# for refused or cancelled ones. docs/bluez-contract.md §5 says why.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=$VM/configs/longwrite.json
HOOK_LOG=/tmp/gattd-longwrite-hook.log

install_gattd_policy

pids=()
trap 'kill "${pids[@]}" "${gattd:-}" 2>/dev/null' EXIT
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 --log-level debug >>"$OUT/gattd.log" 2>&1 &
gattd=$!
serving() {
    wait_count "$OUT/gattd.log" 'GATT application registered' "$1" 90 || exit 1
    wait_count "$OUT/gattd.log" 'advertisement registered' "$1" 60 || exit 1
    kill -0 "$gattd" 2>/dev/null || { echo "FAIL: gattd exited"; tail "$OUT/gattd.log"; exit 1; }
}
serving 1
wait_for_line "$OUT/gattd.log" 'control API ready' 30 || exit 1
echo "gattd serves longwrite.json ($(elapsed) s)"

/usr/bin/python3 -u "$ROOT/Tests/integration/handler_program.py" --ids handled >"$OUT/handler.log" 2>&1 &
pids+=($!)
wait_for_line "$OUT/handler.log" '^registered' 30 || exit 1

# hook_saw N, handler_saw N (after the line counts taken before a pass): the hook ran N times
# and the handler got one Write in this pass, each with offset 0 and all 200 bytes.
hook_saw() {
    local hook
    hook=$(tail -n +"$((hook_before + 1))" "$HOOK_LOG")
    [ "$(grep -c . <<<"$hook")" = "$1" ] && ! grep -Ev '^offset=0 [0-9a-f]{400}$' <<<"$hook" \
        || { echo "FAIL: expected $1 hook run(s) with offset=0 and 200 bytes; the hook saw:"; cut -c1-60 <<<"$hook"; exit 1; }
    echo "the deciding hook ran $1 time(s), each with offset=0 and all 200 bytes"
}
handler_saw_one() {
    local handler
    handler=$(grep "^write " "$OUT/handler.log" | tail -n +"$((handler_before + 1))")
    [ "$(grep -c . <<<"$handler")" = 1 ] && grep -Eq '^write handled [0-9a-f]{400} reply=True offset=0 address=([0-9A-F]{2}:){5}[0-9A-F]{2} device=/org/bluez/hci0/dev_[0-9A-F_]+$' <<<"$handler" \
        || { echo "FAIL: expected one Write with offset=0 and 200 bytes; the handler saw:"; cut -c1-60 <<<"$handler"; exit 1; }
    echo "the handler got one Write: offset=0, all 200 bytes"
}
mark() { hook_before=$(count "$HOOK_LOG" .); handler_before=$(count "$OUT/handler.log" '^write '); }

echo "== MTU 48: bluetoothd's own central (D-Bus WriteValue; bluetoothd-mtu48.conf)"
mark
/usr/bin/python3 -u "$VM/longwrite.py" --gattctl "$GATTCTL_BIN" --adapter hci1 --peer "$HCI0_ADDR" --mtu 48 || exit 1
hook_saw 2  # accepted, refused (ff...)
handler_saw_one
echo "MTU 48 done ($(elapsed) s)"

echo "== MTU 23: a central speaking ATT itself (Prepare Write / Execute Write, no MTU exchange)"
mark
/usr/bin/python3 -u "$VM/longwrite_att.py" --gattctl "$GATTCTL_BIN" --own "$HCI1_ADDR" --peer "$HCI0_ADDR" || exit 1
hook_saw 1  # the accepted write only: the refused 201 bytes and the cancelled write never reach it
handler_saw_one
# bluetoothd asked about the first piece for `authed` (flag authorize) with no data.
grep -Eq 'debug: write .*gatt.id=authed length=0 offset=0' "$OUT/gattd.log" \
    || { echo "FAIL: gattd did not log the prepare-authorize ask (an empty write) for authed"; exit 1; }
echo "gattd got the prepare-authorize ask for authed: a WriteValue with no data, then the 200 bytes"
echo "MTU 23 done ($(elapsed) s)"
if [ -s "$OUT/btmon.txt" ]; then
    echo "btmon (counts only; btmon drops packets under TCG): $(grep -c 'ATT: Prepare Write Request' "$OUT/btmon.txt") Prepare Write Request, $(grep -c 'ATT: Execute Write Request' "$OUT/btmon.txt") Execute Write Request"
fi
echo "scenario passed in $(elapsed) s"
