#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-channels: L2CAP LE credit-based channels (the definition's "channels") with the real
# kernel on both ends (direct init, one boot, configs/channels.json).
# A kernel-socket central (channels_central.py) on hci1 reads the PSMs from Apple's PSM
# characteristic over ATT, then:
#   1. echo: the kernel-chosen PSM, relayed through a program gattd starts per channel
#      (sh -c 'exec cat'); CHANNEL_BYTES (default 4 MiB) each way in SDUs of varied size, in
#      order, nothing lost or doubled, at most WINDOW bytes unechoed (docs/channels.md: the
#      kernel reorders SDUs at a receiver whose socket fills); gattd's CPU time per MiB;
#   2. fixed: PSM 0x91 asked for, relayed through cat;
#   3. untaken (no program, no registered taker) and broken (a program that cannot start):
#      the central's connect is refused and gattd logs the cause;
#   4. a registered taker (gattctl channel untaken -- cat) gets the descriptor and echoes
#      CHANNEL_BYTES; once it leaves, the channel is refused again;
#   5. two channels echo on one PSM at once (two sockets of hci1: two centrals' links reach
#      hci0 with one handle under btvirt unless a third controller holds one, as in
#      gattd-centrals);
#   6. the program killed mid-transfer: the central sees the channel close;
#   7. gattd restarted: over the link that outlived it (bluetoothd on hci1 holds it, as a
#      phone that stays connected does) the re-bound PSM echoes; then, the link dropped, the
#      PSMs read again over ATT are the same (the central's raw ATT socket must make its own
#      link: on a link a channel made, bluetoothd's ATT holds CID 4 and connect gets EBUSY).
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN, CHANNEL_BYTES.
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=$VM/configs/channels.json
STATE=/tmp/gattd-channels-state
BYTES=${CHANNEL_BYTES:-4194304}
# The central keeps at most this many bytes sent and not yet echoed (docs/channels.md: on
# kernels that grant credits for the receive buffer's free bytes, a receiver that falls
# behind gets SDUs out of order once its socket is full).
WINDOW=262144
central() { /usr/bin/python3 -u "$VM/channels_central.py" --own "$HCI1_ADDR" --peer "$HCI0_ADDR" "$@"; }

# what each hop counted when an echo failed: gattd's relay (bytes each way) and the kernel's
# Bluetooth messages
echo_failed() {
    wait_for_line "$OUT/gattd.log" 'channel closed' 10
    echo "gattd's channels so far (bytes.in: read from the central, bytes.out: sent to it):"
    grep 'channel closed' "$OUT/gattd.log" | sed 's/^/  /'
    echo "kernel:"; dmesg | grep -i -E 'bluetooth|l2cap' | tail -20 | sed 's/^/  /'
    exit 1
}
# gattd's CPU time so far, in milliseconds (user + system, /proc/PID/stat)
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$gattd/stat"; }
# measured NAME COMMAND...: runs COMMAND (an echo of $BYTES each way), then prints gattd's CPU
# time during it per MiB relayed (BENCHMARKS.md)
measured() {
    local name=$1 before after; shift
    before=$(cpu_ms)
    "$@" || return 1
    after=$(cpu_ms)
    echo "$name: gattd used $((after - before)) ms of CPU for $BYTES bytes each way" \
        "($(( (after - before) * 1048576 / BYTES )) ms per MiB each way)"
}
install_gattd_policy
gattd=
trap 'kill "${gattd:-}" 2>/dev/null' EXIT
start_gattd() {
    "$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir "$STATE" --log-level debug >>"$OUT/gattd.log" 2>&1 &
    gattd=$!
    wait_count "$OUT/gattd.log" 'GATT application registered' "$1" 90 || exit 1
    wait_count "$OUT/gattd.log" 'channel listening' "$((4 * $1))" 30 || exit 1
    kill -0 "$gattd" 2>/dev/null || { echo "FAIL: gattd exited"; tail "$OUT/gattd.log"; exit 1; }
}
start_gattd 1
echo "gattd serves channels.json ($(elapsed) s)"

echo "== the PSM characteristics"
psms=$(central read-psm) || { echo "$psms"; exit 1; }
read -r echo_psm fixed_psm untaken_psm broken_psm <<<"$psms"
{ [ "$fixed_psm" = 145 ] && [ "$untaken_psm" = 146 ] && [ "$broken_psm" = 147 ] \
    && [ "$echo_psm" -ge 128 ] && [ "$echo_psm" -le 255 ]; } \
    || { echo "FAIL: PSM characteristics hold '$psms'; expected a dynamic PSM, then 145 146 147"; exit 1; }
grep -q "channel listening .*channel=echo psm=0x$(printf %x "$echo_psm")" "$OUT/gattd.log" \
    || { echo "FAIL: gattd's log does not name PSM $echo_psm for channel echo"; exit 1; }
echo "PSMs read over ATT: echo $echo_psm (kernel-chosen), fixed 145, untaken 146, broken 147 ($(elapsed) s)"

echo "== echo through a relayed program, $BYTES bytes each way"
measured "relayed through cat" central echo "$echo_psm" "$BYTES" --window "$WINDOW" || echo_failed
wait_for_line "$OUT/gattd.log" "channel closed: the central closed the channel.*bytes.in=$BYTES bytes.out=$BYTES" 30 \
    || { echo "FAIL: gattd did not log the channel closed with $BYTES bytes each way"; exit 1; }
echo "gattd counted $BYTES bytes each way ($(elapsed) s)"

echo "== PSM 0x91 asked for, relayed through cat"
central echo "$fixed_psm" 262144 --window "$WINDOW" || echo_failed

echo "== refusals"
central refused "$untaken_psm" || exit 1
wait_for_line "$OUT/gattd.log" 'channel refused: no program has registered to take it.*channel=untaken' 10 || exit 1
central refused "$broken_psm" || exit 1
wait_for_line "$OUT/gattd.log" 'channel refused: its program cannot start.*channel=broken' 10 || exit 1
echo "no taker and a program that cannot start: refused, the cause logged ($(elapsed) s)"

echo "== a registered taker: gattctl channel untaken -- cat"
"$GATTCTL_BIN" channel untaken -- cat >"$OUT/taker.log" 2>&1 &
taker=$!
wait_for_line "$OUT/taker.log" '^taking channel untaken' 10 || exit 1
measured "descriptor passed to gattctl channel (cat)" central echo "$untaken_psm" "$BYTES" --window "$WINDOW" || echo_failed
grep -q "^opened $HCI1_ADDR public psm=$untaken_psm " "$OUT/taker.log" \
    || { echo "FAIL: gattctl channel did not report the channel opened"; cat "$OUT/taker.log"; exit 1; }
kill -TERM "$taker"; wait "$taker"
wait_for_line "$OUT/gattd.log" 'channel taker gone.*channel=untaken' 10 || exit 1
central refused "$untaken_psm" || exit 1
echo "the registered taker echoed $BYTES bytes each way; once it left, the channel is refused again ($(elapsed) s)"

echo "== two channels at once (one central, two sockets: btvirt gives two centrals' links to"
echo "   hci0 one handle, Tests/vm/README.md, gattd-centrals)"
central --own2 "$HCI1_ADDR" parallel "$echo_psm" 524288 --window "$WINDOW" || exit 1

echo "== the program killed mid-transfer"
central echo "$echo_psm" 1048576 --kill /tmp/gattd-channel-echo.pid || exit 1
wait_for_line "$OUT/gattd.log" 'channel program ended.*killed by signal 9' 10 || exit 1

echo "== gattd restarted: the same PSM"
kill -TERM "$gattd"; wait "$gattd"; gattd=
start_gattd 2
# The link hci1 made for the channels outlives gattd: bluetoothd on hci1 put its ATT (on
# 5.66 also EATT) on it and keeps it up. A phone that stays connected opens the channel again
# on its link; so does the central here.
central link-up || exit 1
central echo "$echo_psm" 65536 || exit 1
# read-psm's raw ATT socket (CID 4) gets EBUSY on a link bluetoothd's ATT is on: it must make
# its own (Tests/vm/README.md, gattd-channels).
central drop-link || exit 1
again=$(central read-psm) || { echo "$again"; exit 1; }
[ "$again" = "$psms" ] || { echo "FAIL: after a restart the PSMs are '$again', before '$psms'"; exit 1; }
echo "after a restart PSM $echo_psm echoes over the link that outlived gattd, and read again" \
    "over a new link the PSMs are the same: $again ($(elapsed) s)"
echo "scenario passed in $(elapsed) s"
