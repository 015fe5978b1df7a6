#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-powercut: an acknowledged write survives a power cut (driven by Tests/vm/run-powercut,
# which boots the guest several times on one disk). The state directory is an ext4 file
# system on a virtio disk (run-guest --disk), mounted with GATTD_POWERCUT_MOUNT: data=ordered
# (Debian's default) or data=writeback,noauto_da_alloc (metadata may reach the disk before
# the data, and no flush of a file renamed over another: what a file system without ext4's
# rename heuristics gives; only there does a missing fsync of the file itself show, as
# ext4's defaults write a replaced file's data at the rename). Each boot:
#   1. mounts the disk (ext4 replays its journal); when an earlier boot left state there,
#      checks that state.json parses and that gattd, started on it, has every value that
#      was acknowledged before the cut: for each writer (a real central's write requests,
#      `gattctl set`) the value is the last one its ledger says was acknowledged, or the
#      next one (a write under way at the cut may be saved and not yet acknowledged);
#   2. with GATTD_POWERCUT_AFTER=N, both writers write as fast as they can, each appending
#      every acknowledged value to a ledger on the host (the results share, written through
#      at once); when the central has N more acknowledged, the guest loses power: sysrq b,
#      an immediate reboot without sync or unmount (qemu runs with -no-reboot and exits),
#      with GATTD_POWERCUT_WHEN=storm while both still write, with quiet just after both
#      stopped (then no later write's fsync makes the last one durable in passing).
# Without GATTD_POWERCUT_AFTER the boot checks and ends with a verdict.
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN, GATTD_POWERCUT_AFTER,
#   GATTD_POWERCUT_MOUNT, GATTD_POWERCUT_WHEN.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=$VM/configs/powercut.json
STATE=/var/lib/gattd-powercut
BOOT=$(( $(cat "$OUT/boots" 2>/dev/null || echo 0) + 1 ))
echo "$BOOT" >"$OUT/boots"
echo "boot $BOOT"
install_gattd_policy

modprobe virtio_blk && modprobe ext4 || { echo "FAIL: modprobe virtio_blk ext4"; exit 1; }
for _ in $(seq 50); do [ -b /dev/vda ] && break; sleep 0.1; done
[ -b /dev/vda ] || { echo "FAIL: no /dev/vda (run-guest --disk)"; exit 1; }
mkdir -p "$STATE"
mount -t ext4 -o "${GATTD_POWERCUT_MOUNT:-data=ordered}" /dev/vda "$STATE" \
    || { echo "FAIL: mount /dev/vda"; dmesg | tail -5; exit 1; }
echo "state directory: $(findmnt -n -o SOURCE,FSTYPE,OPTIONS "$STATE")"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
"$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir "$STATE" --log-level debug \
    >"$OUT/gattd.boot$BOOT.log" 2>&1 &
pids+=($!)
wait_for_line "$OUT/gattd.boot$BOOT.log" 'advertisement registered' 90 || exit 1

# last LEDGER: the last value a writer's ledger says was acknowledged (0 before any).
last() { sed -n 's/^acked //p' "$1" 2>/dev/null | tail -n 1 | grep . || echo 0; }
# value ID: gattd's value of a characteristic, as the uint32 it holds.
value() {
    "$GATTCTL_BIN" get "$1" --json | /usr/bin/python3 -c \
        'import json, sys; h = json.load(sys.stdin)["hex"]; print(int.from_bytes(bytes.fromhex(h.removeprefix("0x")), "little"))'
}

if [ -f "$STATE/state.json" ]; then
    /usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$STATE/state.json" \
        || { echo "FAIL: state.json does not parse after the cut"; head -c 600 "$STATE/state.json"; exit 1; }
    echo "state.json parses ($(stat -c %s "$STATE/state.json") bytes)"
fi
for who in central program; do
    acked=$(last "$OUT/ledger.$who") got=$(value "$who") || { echo "FAIL: gattctl get $who"; exit 1; }
    if [ "$got" = "$acked" ] || [ "$got" = $((acked + 1)) ]; then
        echo "$who: $got after the cut, $acked acknowledged before it: kept"
    else
        echo "FAIL: $who is $got after the cut, but $acked was acknowledged before it"
        exit 1
    fi
    eval "start_$who=$got"
done

[ -n "${GATTD_POWERCUT_AFTER:-}" ] || { echo "no cut asked for: done"; exit 0; }

# The write storm: the central's write requests and gattctl set, each value acknowledged
# only once gattd has it on the disk, each acknowledgement in a ledger on the host.
STOP=/tmp/powercut.stop
rm -f "$STOP"
/usr/bin/python3 -u "$VM/powercut.py" --adapter hci1 --peer "$HCI0_ADDR" --start "$start_central" \
    --ledger "$OUT/ledger.central" --stop "$STOP" >"$OUT/central.boot$BOOT.log" 2>&1 &
pids+=($!)
(
    v=$start_program
    while [ ! -e "$STOP" ]; do
        v=$((v + 1))
        "$GATTCTL_BIN" set program --uint32 "$v" >/dev/null 2>>"$OUT/gattctl.boot$BOOT.err" || exit 1
        echo "acked $v" >>"$OUT/ledger.program"
    done
) &
pids+=($!)
before=$(count "$OUT/ledger.central" '^acked')
wait_count "$OUT/ledger.central" '^acked' $((before + GATTD_POWERCUT_AFTER)) 180 || {
    tail -5 "$OUT/central.boot$BOOT.log"; exit 1; }
how="during the storm"
if [ "${GATTD_POWERCUT_WHEN:-storm}" = quiet ]; then
    # The writers stop first, each after its last write was acknowledged, so that write is
    # the last thing gattd did: no later write's fsync can make its rename durable in passing.
    touch "$STOP"
    for p in "${pids[@]:1}"; do wait "$p" 2>/dev/null; done
    how="just after the writers stopped"
fi
echo "cut $how, after $GATTD_POWERCUT_AFTER acknowledged writes from the central" \
    "(central at $(last "$OUT/ledger.central"), program at $(last "$OUT/ledger.program"))" \
    | tee "$OUT/cut.boot$BOOT"
echo 1 >/proc/sys/kernel/sysrq
echo b >/proc/sysrq-trigger
sleep 30   # not reached: the guest is gone
echo "FAIL: still running 30 s after sysrq b"
exit 1
