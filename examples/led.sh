#!/bin/sh
# SPDX-License-Identifier: MIT
# A board in a few lines of shell, with gattctl (gattd serving led.json):
#  - a central's write to `led` (one byte, 0 or not) switches an LED: the value goes to
#    LED_PATH (default /sys/class/leds/led0/brightness);
#  - `uptime` is set from /proc/uptime every INTERVAL seconds (default 5); subscribed
#    centrals are notified.
# `gattctl watch` prints "written <id> <hex> ..." for each write. When gattd goes away
# (a restart, an upgrade) the script waits for it and watches again; it ends on
# SIGINT/SIGTERM. Run as a member of group gattd (or root), or with examples/led.service:
#     LED_PATH=/sys/class/leds/led0/brightness examples/led.sh
set -eu
GATTCTL=${GATTCTL:-gattctl}
LED_PATH=${LED_PATH:-/sys/class/leds/led0/brightness}
INTERVAL=${INTERVAL:-5}

publish_uptime() {
    while :; do
        read -r seconds _ </proc/uptime
        # fails while gattd is away (a restart): the next tick tries again
        "$GATTCTL" set uptime --utf8 "${seconds%.*} s" || true
        sleep "$INTERVAL"
    done
}
publish_uptime &
publisher=$!
events=$(mktemp -u "${TMPDIR:-/tmp}/led.XXXXXX")
mkfifo -m 600 "$events"
# gattctl watch exits when gattd leaves the bus, and fails at once while it is away:
# start it again, once a second, until gattd is back.
watch_writes() {
    child=
    trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM
    while :; do
        "$GATTCTL" watch &
        child=$!
        wait "$child" || echo "led.sh: gattd is gone; watching again when it is back" >&2
        sleep 1
    done
}
watch_writes >"$events" &
watcher=$!
trap 'kill "$publisher" "$watcher" 2>/dev/null; rm -f "$events"' EXIT
trap 'exit 0' INT TERM

while read -r event id hex _; do
    [ "$event" = written ] && [ "$id" = led ] || continue
    case ${hex#0x} in
        00) echo 0 >"$LED_PATH" ;;
        *) echo 1 >"$LED_PATH" ;;
    esac
    echo "led.sh: LED $( [ "${hex#0x}" = 00 ] && echo off || echo on )" >&2
done <"$events"
