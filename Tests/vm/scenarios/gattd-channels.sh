#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-channels: L2CAP LE credit-based channels (the definition's "channels") with the real
# kernel on both ends (direct init, one boot, configs/channels.json, run-guest --controllers 4).
# bluetoothd on hci1 connects to gattd and keeps that link for the whole scenario; the
# channels are kernel sockets (channels_central.py) on it: a channel socket that had to make
# its own link could meet gattd's controller while its advertising is switched off and on
# after a disconnection, and then waits 40 s and fails (Tests/vm/README.md, gattd-channels).
#   1. the PSMs read over ATT (bluetoothd's GATT client) from Apple's PSM characteristics;
#      untaken (no program, no registered taker): gattd holds its PSM without listening, so
#      the kernel answers the central "PSM not supported" (0x0002, btmon; checked here while
#      btmon keeps up) and another bind of it fails (EADDRINUSE); gattd sees nothing;
#   2. encrypt (PSM 0x94, security "encrypt", its PSM characteristic encrypt-read): with the
#      pairing window closed the connect is refused (the kernel answers "insufficient
#      encryption" or "authentication", btmon shows it; gattd is never asked:
#      docs/channels.md, "Refusals"), then after `gattctl pairing open` the central pairs
#      and the channel opens and echoes;
#   3. a long-lived channel (fixed: PSM 0x91 asked for, relayed through cat) is opened and
#      used, then left open while the steps below run (it is used again in step 8b);
#      echo: the kernel-chosen PSM, relayed through a program gattd starts per channel
#      (sh -c 'exec cat'); CHANNEL_BYTES (default 4 MiB) each way
#      in SDUs of varied size, in order, nothing lost or doubled, at most WINDOW bytes
#      unechoed (docs/channels.md: the kernel reorders SDUs at a receiver whose socket
#      fills); gattd's CPU time per MiB;
#   4. (PSM 0x91 asked for, relayed through cat: the long-lived channel of steps 3 and 8b,
#      which took this step's place and its 3 s);
#   5. broken (a program that cannot start; gattd warned at its start): the kernel accepts
#      the channel, gattd closes it at once and logs the cause;
#   6. a registered taker (gattctl channel untaken -- cat): gattd listens from its
#      registration, the taker gets the descriptor and echoes CHANNEL_BYTES; once it leaves
#      gattd stops listening and holds the PSM again: refused by the kernel at once;
#   7. two centrals on one channel at once: hci1 and hci2 (hci2 first holds a link to hci3,
#      for btvirt's connection handles, as in gattd-centrals);
#   8. the program killed mid-transfer: the central sees the channel close;
#   8b. the long-lived channel of step 3, used again once it is at least 45 s old (the wait
#      is only what remains of the 45 s after steps 3-8, measured from its open; with the
#      default CHANNEL_BYTES those steps take longer and nothing is waited): the kernel
#      closed channels accepted with BT_DEFER_SETUP 40 s after the request
#      (docs/channels.md), gattd no longer defers;
#   9. gattd restarted: over the link that outlived it the re-bound PSM echoes, and the PSMs
#      read again are the same.
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
[ -n "${HCI2_ADDR:-}" ] && [ -n "${HCI3_ADDR:-}" ] || { echo "FAIL: no hci2/hci3 (run-guest --controllers 4)"; exit 1; }
central() { /usr/bin/python3 -u "$VM/channels_central.py" --adapter hci1 --own "$HCI1_ADDR" --peer "$HCI0_ADDR" "$@"; }
# The services with a PSM characteristic (configs/channels.json): echo fixed untaken broken,
# and locked's, readable only once paired (encrypt-read).
SERVICES="12345678-1234-5678-1234-56789abc0c01 12345678-1234-5678-1234-56789abc0c03 12345678-1234-5678-1234-56789abc0c04 12345678-1234-5678-1234-56789abc0c05"
LOCKED=12345678-1234-5678-1234-56789abc0c06

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
gattd= long=
trap 'kill "${gattd:-}" "${long:-}" 2>/dev/null' EXIT
start_gattd() {
    "$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir "$STATE" --log-level debug >>"$OUT/gattd.log" 2>&1 &
    gattd=$!
    wait_count "$OUT/gattd.log" 'GATT application registered' "$1" 90 || exit 1
    # the last line of gattd's channel setup: broken's program checked
    wait_count "$OUT/gattd.log" "channel's program cannot start: .*channel=broken" "$1" 30 || exit 1
    kill -0 "$gattd" 2>/dev/null || { echo "FAIL: gattd exited"; tail "$OUT/gattd.log"; exit 1; }
}
start_gattd 1
echo "gattd serves channels.json ($(elapsed) s)"
checked=$("$GATTD_BIN" --check --config "$CONFIG" 2>&1)
grep -q 'channel locked: psm 0x94, security encrypt, PSM characteristic (encrypt-read)' <<<"$checked" \
    || { echo "FAIL: gattd --check does not give channel locked an encrypt-read PSM characteristic"; exit 1; }

echo "== 1. the PSM characteristics"
central connect || exit 1
# shellcheck disable=SC2086
psms=$(central read-psm $SERVICES) || { echo "$psms"; exit 1; }
read -r echo_psm fixed_psm untaken_psm broken_psm <<<"$psms"
{ [ "$fixed_psm" = 145 ] && [ "$untaken_psm" = 146 ] && [ "$broken_psm" = 147 ] \
    && [ "$echo_psm" -ge 128 ] && [ "$echo_psm" -le 255 ]; } \
    || { echo "FAIL: PSM characteristics hold '$psms'; expected a dynamic PSM, then 145 146 147"; exit 1; }
grep -q "channel listening .*channel=echo psm=0x$(printf %x "$echo_psm")" "$OUT/gattd.log" \
    || { echo "FAIL: gattd's log does not name PSM $echo_psm for channel echo"; exit 1; }
echo "PSMs read over ATT: echo $echo_psm (kernel-chosen), fixed 145, untaken 146, broken 147 ($(elapsed) s)"
grep -q "channel's PSM held; it listens while a program has registered to take it.*channel=untaken psm=0x92" \
    "$OUT/gattd.log" || { echo "FAIL: gattd did not log untaken's PSM held and not listening"; exit 1; }
log_lines=$(wc -l <"$OUT/gattd.log")
central refused "$untaken_psm" || exit 1
wait_for_line "$OUT/btmon.txt" 'Result: Connection refused - PSM not supported \(0x0002\)' 30 || exit 1
if tail -n +"$((log_lines + 1))" "$OUT/gattd.log" | grep -q 'channel=untaken'; then
    echo "FAIL: gattd saw a channel on untaken, which does not listen"; exit 1
fi
central held "$untaken_psm" || exit 1
echo "untaken without a taker: the kernel answers 'PSM not supported' (0x0002, btmon), gattd holds the PSM" \
    "and sees nothing ($(elapsed) s)"

echo "== 2. an encrypt channel: refused before pairing, open after it"
# The window (pairableSeconds 1) closed a second after gattd started. This step comes before
# the big echoes: btmon, which shows the kernel's answer, falls behind by tens of seconds
# while it decodes megabytes of channel data.
wait_for_line "$OUT/gattd.log" 'pairing closed' 10 || exit 1
# gattd logs the window closed as it sets hci0's Pairable false (bluetoothd's own
# PairableTimeout, 1 s, closes it too)
pairable() {
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Get \
        string:org.bluez.Adapter1 string:Pairable | awk '/boolean/ { print $3 }'
}
deadline=$(( $(date +%s) + $(bound 10) ))
until [ "$(pairable)" = false ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: hci0 Pairable is '$(pairable)' with the window closed"; exit 1; }
    sleep 0.2
done
echo "pairing window closed: $("$GATTCTL_BIN" pairing); hci0 Pairable false"
log_lines=$(wc -l <"$OUT/gattd.log")
central refused 148 || exit 1
# The kernel answers for gattd, before gattd has a channel to accept: only btmon sees why.
wait_for_line "$OUT/btmon.txt" 'Result: Connection refused - insufficient (authentication|encryption) ' 60 || exit 1
echo "the kernel's answer (btmon): $(grep -E -o 'Connection refused - insufficient (authentication|encryption) \(0x000[58]\)' "$OUT/btmon.txt" | tail -1)"
echo "the central's kernel then paired by itself (btmon): $(grep -E -A1 'SMP: Pairing (Request|Failed)' "$OUT/btmon.txt" | grep -E -o 'SMP: Pairing Request|Reason: .*' | awk '!seen[$0]++' | tr '\n' ' ')"
meanwhile=$(tail -n +"$((log_lines + 1))" "$OUT/gattd.log")
if grep -q 'channel=locked' <<<"$meanwhile"; then
    echo "FAIL: gattd saw the channel that the kernel refused:"; echo "$meanwhile"; exit 1
fi
echo "gattd's log meanwhile (it never saw the channel):"; sed 's/^/  /' <<<"$meanwhile"
if central link-up >/dev/null; then
    echo "the link stayed up"
else
    # gattd's adapter advertises again once gattd has seen the central go (the kernel
    # switches advertising back on as the link ends, before bluetoothd hears of it)
    wait_for_line "$OUT/gattd.log" "central disconnected address=$HCI1_ADDR" 10 || exit 1
    echo "the failed pairing ended the link (the kernel disconnects after a failed pairing)"
fi
"$GATTCTL_BIN" pairing open "$(bound 60)" || exit 1
central pair || exit 1
locked=$(central read-psm "$LOCKED") || { echo "$locked"; exit 1; }
[ "$locked" = 148 ] || { echo "FAIL: locked's PSM characteristic holds '$locked', expected 148"; exit 1; }
echo "paired: locked's PSM characteristic (encrypt-read) reads 148"
central echo 148 262144 --window "$WINDOW" || echo_failed
wait_for_line "$OUT/gattd.log" 'channel closed: the central closed the channel.*bytes.in=262144 bytes.out=262144 channel=locked' 10 || exit 1
echo "the encrypt channel opened after pairing and echoed ($(elapsed) s)"

echo "== 3. a long-lived channel opened; echo through a relayed program, $BYTES bytes each way"
# The central waits on a FIFO for the go of step 8b (in the guest's /tmp: $OUT's file
# system, shared with the host, has none).
fifo=/tmp/gattd-channels-long.fifo
rm -f "$fifo"; mkfifo "$fifo" || exit 1
central long "$fixed_psm" 45 <"$fifo" >"$OUT/long.log" 2>&1 &
long=$!
exec 7>"$fifo"
wait_for_line "$OUT/long.log" '^opened: ' 30 || { cat "$OUT/long.log"; exit 1; }
measured "relayed through cat" central echo "$echo_psm" "$BYTES" --window "$WINDOW" || echo_failed
wait_for_line "$OUT/gattd.log" "channel closed: the central closed the channel.*bytes.in=$BYTES bytes.out=$BYTES" 30 \
    || { echo "FAIL: gattd did not log the channel closed with $BYTES bytes each way"; exit 1; }
echo "gattd counted $BYTES bytes each way ($(elapsed) s)"

echo "== 5. a program that cannot start"
grep -q "channel's program cannot start: .*channel=broken" "$OUT/gattd.log" \
    || { echo "FAIL: gattd did not warn at its start that broken's program cannot start"; exit 1; }
central closed "$broken_psm" || exit 1
wait_for_line "$OUT/gattd.log" 'channel refused: its program cannot start.*channel=broken' 10 || exit 1
echo "a program that cannot start: the channel closed at once, the cause logged ($(elapsed) s)"

echo "== 6. a registered taker: gattctl channel untaken -- cat"
"$GATTCTL_BIN" channel untaken -- cat >"$OUT/taker.log" 2>&1 &
taker=$!
wait_for_line "$OUT/taker.log" '^taking channel untaken' 10 || exit 1
# gattd answers RegisterChannel once it listens
grep -q 'channel listening .*channel=untaken psm=0x92' "$OUT/gattd.log" \
    || { echo "FAIL: gattd took the registration without listening on untaken's PSM"; exit 1; }
measured "descriptor passed to gattctl channel (cat)" central echo "$untaken_psm" "$BYTES" --window "$WINDOW" || echo_failed
grep -q "^opened $HCI1_ADDR public psm=$untaken_psm " "$OUT/taker.log" \
    || { echo "FAIL: gattctl channel did not report the channel opened"; cat "$OUT/taker.log"; exit 1; }
kill -TERM "$taker"; wait "$taker"
wait_for_line "$OUT/gattd.log" 'channel not listening: no program takes it.*channel=untaken' 10 || exit 1
central refused "$untaken_psm" || exit 1
central held "$untaken_psm" || exit 1
echo "the registered taker echoed $BYTES bytes each way; once it left, gattd holds the PSM without listening" \
    "and the kernel refuses the channel again ($(elapsed) s)"

echo "== 7. two centrals on one channel at once: hci1 and hci2"
central --holder "$HCI3_ADDR" hold || exit 1
central --own2 "$HCI2_ADDR" parallel "$echo_psm" 262144 --window "$WINDOW" || exit 1
grep -q "channel opened.*address=$HCI2_ADDR .*channel=echo" "$OUT/gattd.log" \
    || { echo "FAIL: gattd's log has no channel opened for $HCI2_ADDR"; grep 'channel opened' "$OUT/gattd.log" | tail -3; exit 1; }

echo "== 8. the program killed mid-transfer"
central echo "$echo_psm" 524288 --kill /tmp/gattd-channel-echo.pid || exit 1
wait_for_line "$OUT/gattd.log" 'channel program ended.*killed by signal 9' 10 || exit 1

echo "== 8b. the long-lived channel, 45 s or more after its open"
echo go >&7; exec 7>&-
wait "$long"; status=$? long=
cat "$OUT/long.log"
[ "$status" = 0 ] || echo_failed
wait_for_line "$OUT/gattd.log" 'channel closed: the central closed the channel.*bytes.in=66560 bytes.out=66560 channel=fixed' 10 \
    || exit 1
grep -q 'channel opened .*channel=fixed .*program=cat psm=0x91 ' "$OUT/gattd.log" \
    || { echo "FAIL: gattd did not log the channel on PSM 0x91 opened with its program cat"; exit 1; }

echo "== 9. gattd restarted: the same PSM"
kill -TERM "$gattd"; wait "$gattd"; gattd=
start_gattd 2
# The link hci1 holds outlives gattd, as a phone that stays connected keeps its link; the
# channel opens again on it.
central link-up || exit 1
central echo "$echo_psm" 65536 || exit 1
# bluetoothd on hci1 learns the re-registered database from Service Changed.
# shellcheck disable=SC2086
again=$(central --retry 30 read-psm $SERVICES $LOCKED) || { echo "$again"; exit 1; }
[ "$again" = "$psms 148" ] || { echo "FAIL: after a restart the PSMs are '$again', before '$psms 148'"; exit 1; }
echo "after a restart PSM $echo_psm echoes over the link that outlived gattd, and the PSMs read" \
    "again are the same: $again ($(elapsed) s)"
echo "scenario passed in $(elapsed) s"
