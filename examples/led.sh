#!/bin/sh
# SPDX-License-Identifier: MIT
# A board in a few lines of shell, with gattctl (gattd serving led.json):
#  - a central's write to `led` (one byte, 0 or not) switches an LED: the value goes to
#    LED_PATH (default /sys/class/leds/led0/brightness);
#  - `uptime` is set from /proc/uptime every INTERVAL seconds (default 5); subscribed
#    centrals are notified.
# `gattctl watch` prints "written <id> <hex> ..." for each write; its exit (gattd gone)
# ends the script. Run as root or as a member of group gattd:
#     sudo LED_PATH=/sys/class/leds/led0/brightness examples/led.sh
set -eu
GATTCTL=${GATTCTL:-gattctl}
LED_PATH=${LED_PATH:-/sys/class/leds/led0/brightness}
INTERVAL=${INTERVAL:-5}

publish_uptime() {
    while :; do
        read -r seconds _ </proc/uptime
        "$GATTCTL" set uptime --utf8 "${seconds%.*} s" || return
        sleep "$INTERVAL"
    done
}
publish_uptime &
publisher=$!
events=$(mktemp -u "${TMPDIR:-/tmp}/led.XXXXXX")
mkfifo -m 600 "$events"
"$GATTCTL" watch >"$events" &
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
