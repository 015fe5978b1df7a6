#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-full: one boot, everything a central can see of gattd (direct init):
#   1. gattd's own advertisement (name, service UUIDs, manufacturer data from the config),
#      the core checks (tree, reads incl. a long read, writes, 0x0D, 0x03), a deciding
#      write hook (application error / accept), timer notifications that stop after
#      unsubscribing, a notification from `gattctl set`, a confirmed indication;
#   2. gattd stopped (SIGTERM) and started again: the central reads the value it wrote;
#   3. bluetoothd killed and started again: gattd registers again, the central finds the
#      advertisement and the services and reads the value again;
#   4. hci0 powered off and on (Adapter1.Powered): advertising resumes.
#   Between 1's registration and its central: `gattd --doctor` (text and --json) reports
#   this bluetoothd's version, hci0 with gattd's advertisement, the main.conf bluetoothd was given,
#   gattd registered, and finds no problem (exit 0).
# Environment (run-guest --env): GATTD_BIN, GATTCTL_BIN (default: next to GATTD_BIN),
#   GATTD_CONFIG (default configs/full.json), GATTD_VM_BREAK (a deliberate failure:
#   expect-manufacturer-data = the central expects other manufacturer data than gattd
#   serves; lose-state = gattd restarts with an empty state directory).
# Run bluetoothd with --main-conf configs/bluetoothd-main.conf (ATT MTU 100).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=${GATTD_CONFIG:-$VM/configs/full.json}
STATE=/var/lib/gattd-vm
[ -f "$CONFIG" ] || { echo "FAIL: config $CONFIG missing"; exit 1; }

# What the central expects: the config itself, unless a deliberate failure is asked for.
EXPECT=$CONFIG
case "${GATTD_VM_BREAK:-}" in
    "" | lose-state) ;;
    expect-manufacturer-data)
        EXPECT=/tmp/expect.json
        /usr/bin/python3 - "$CONFIG" "$EXPECT" <<'PY' || exit 1
import json, sys
c = json.load(open(sys.argv[1]))
for a in c.get('advertisements', []):
    a['manufacturerData'] = {k: {'hex': 'baddad'} for k in a.get('manufacturerData', {'0xffff': 0})}
json.dump(c, open(sys.argv[2], 'w'))
PY
        echo "deliberate failure: the central expects manufacturer data baddad" ;;
    *) echo "FAIL: unknown GATTD_VM_BREAK=$GATTD_VM_BREAK"; exit 1 ;;
esac

# The control API: the project's bus policy, and (gattd runs as root here, not as user
# gattd as under systemd) a guest-only rule that lets root own org.gattd.
install_gattd_policy

gattd="" pids=()
cleanup() { kill "${pids[@]}" $gattd 2>/dev/null; }
trap cleanup EXIT

starts=0
start_gattd() {
    starts=$((starts + 1))
    echo "--- gattd start $starts" >>"$OUT/gattd.log"
    "$GATTD_BIN" --config "$CONFIG" --adapter hci0 --state-dir "$STATE" --log-level debug \
        >>"$OUT/gattd.log" 2>&1 &
    gattd=$!
}

# gattd_serving N WHY: gattd registered its application and advertisement N times in all.
gattd_serving() {
    wait_count "$OUT/gattd.log" 'GATT application registered' "$1" 90 || exit 1
    wait_count "$OUT/gattd.log" 'advertisement registered' "$1" 60 || exit 1
    kill -0 "$gattd" 2>/dev/null || { echo "FAIL: gattd exited"; tail "$OUT/gattd.log"; exit 1; }
    echo "gattd registered its application and advertisement $2 ($(elapsed) s)"
}

central() {
    /usr/bin/python3 -u "$VM/central.py" "$@" --config "$EXPECT" --adapter hci1 --peer "$HCI0_ADDR" || exit 1
}

mkdir -p "$STATE"
echo "== 1. gattd serves $(basename "$CONFIG") on hci0 and advertises"
start_gattd
gattd_serving 1 "(start)"
grep -q 'serving GATT without the control API' "$OUT/gattd.log" \
    && { echo "FAIL: gattd serves without its control API (bus policy)"; exit 1; }
"$GATTD_BIN" --doctor >"$OUT/doctor.txt" 2>&1; rc=$?
sed 's/^/    doctor: /' "$OUT/doctor.txt"
[ $rc = 0 ] || { echo "FAIL: gattd --doctor exited $rc (a problem found on a healthy guest)"; exit 1; }
"$GATTD_BIN" --doctor --json >"$OUT/doctor.json" 2>"$OUT/doctor.err"; rc=$?
[ $rc = 0 ] || { echo "FAIL: gattd --doctor --json exited $rc: $(cat "$OUT/doctor.err")"; exit 1; }
/usr/bin/python3 - "$OUT/doctor.json" "${GATTD_VM_BLUEZ:-}" "$HCI0_ADDR" <<'PY' || exit 1
import json, sys
report, bluez, address = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
def check(ok, what):
    if not ok:
        print("FAIL: gattd --doctor --json: %s" % what)
        sys.exit(1)
check(report["problem"] is False, "a problem: %s" % report["findings"])
check(all(f["severity"] == "note" for f in report["findings"]), report["findings"])
check(report["bluetoothd"]["version"] == (bluez or report["bluetoothd"]["version"]) and report["bluetoothd"]["version"],
      "bluetoothd version %r, expected %r (%s)" % (report["bluetoothd"]["version"], bluez,
                                                  report["bluetoothd"]["versionSource"]))
adapters = {a["name"]: a for a in report["adapters"]}
hci0 = adapters.get("hci0")
check(hci0 is not None and hci0["address"] == address and hci0["powered"] is True, "hci0: %s" % hci0)
check(hci0["advertising"] is not None and hci0["advertising"]["gattdInstances"] == 1
      and hci0["advertising"]["activeInstances"] >= 1, "hci0 advertising: %s" % hci0["advertising"])
check(report["gattdState"]["registered"] is True and report["gattdState"]["adapter"] == "hci0"
      and report["gattdState"]["advertising"] == ["main"], "gattd state: %s" % report["gattdState"])
# bluetoothd runs with -f configs/bluetoothd-main.conf (ExchangeMTU = 100): --doctor reads that file.
settings = {(s["section"], s["key"]): s["value"] for s in report["mainConf"]["settings"] or []}
check(report["mainConf"]["origin"] == "bluetoothd's -f" and settings.get(("GATT", "ExchangeMTU")) == "100",
      "main.conf: %s" % report["mainConf"])
print("gattd --doctor: bluetoothd %s (%s), hci0 %s, %d note(s), no problem"
      % (report["bluetoothd"]["version"], report["bluetoothd"]["versionSource"], hci0["address"],
         len(report["findings"])))
PY
central gattd --live --gattctl "$GATTCTL_BIN" --gattd-log "$OUT/gattd.log" --reject gate=ff:131
echo "phase 1 done ($(elapsed) s)"

echo "== 2. gattd restarted (SIGTERM, start again): the written value persists"
t0=$(date +%s.%N)
kill -TERM "$gattd"
wait "$gattd"; rc=$?
[ $rc = 0 ] || { echo "FAIL: gattd exited $rc after SIGTERM, expected 0"; exit 1; }
echo "gattd stopped in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, exit 0"
[ "${GATTD_VM_BREAK:-}" = lose-state ] && { echo "deliberate failure: state directory emptied"; rm -rf "${STATE:?}"/*; }
start_gattd
gattd_serving 2 "again after the restart"
central gattd-again
echo "phase 2 done ($(elapsed) s)"

echo "== 3. bluetoothd restarted: gattd registers again"
mapfile -d '' bt_argv <"/proc/$BLUETOOTHD_PID/cmdline"
kill -TERM "$BLUETOOTHD_PID"
for _ in $(seq 100); do kill -0 "$BLUETOOTHD_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$BLUETOOTHD_PID" 2>/dev/null && { echo "FAIL: bluetoothd did not stop within 10 s"; exit 1; }
wait_count "$OUT/gattd.log" 'org.bluez left the bus' 1 30 || exit 1
echo "---- bluetoothd restarted by the scenario" >>"$OUT/bluetoothd.log"
"${bt_argv[@]}" >>"$OUT/bluetoothd.log" 2>&1 &
pids+=($!)
echo "bluetoothd started again: ${bt_argv[*]}"
gattd_serving 3 "again after bluetoothd's restart"
central gattd-again
# The adapter's arrival, its advertising manager and Powered each ask gattd to register; the
# advertisement must go to the new bluetoothd once (it went twice, the second answered AlreadyExists).
again=$(sed -n '/org.bluez left the bus/,$p' "$OUT/gattd.log" | grep -c 'advertisement registered')
[ "$again" = 1 ] || { echo "FAIL: expected one 'advertisement registered' after bluetoothd's restart, got $again"; exit 1; }
echo "phase 3 done ($(elapsed) s)"

echo "== 4. hci0 powered off and on: advertising resumes"
powered() {
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Get \
        string:org.bluez.Adapter1 string:Powered 2>/dev/null | grep -q "boolean $1"
}
power() {
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Set \
        string:org.bluez.Adapter1 string:Powered "variant:boolean:$1" >/dev/null || { echo "FAIL: Powered=$1"; exit 1; }
    for _ in $(seq 100); do powered "$1" && return 0; sleep 0.1; done
    echo "FAIL: hci0 Powered is not $1 after 10 s"; exit 1
}
power false
wait_count "$OUT/gattd.log" 'adapter powered off' 1 15 || exit 1
echo "hci0 powered off; gattd saw it"
power true
wait_count "$OUT/gattd.log" 'adapter powered on' 1 15 || exit 1
echo "hci0 powered on; gattd: $(grep -o 'adapter powered on[^"]*' "$OUT/gattd.log" | tail -1)"
central gattd-again
echo "phase 4 done ($(elapsed) s)"

kill -TERM "$gattd"; wait "$gattd"
echo "btmon saw: $(grep -c 'ATT: Read Blob' "$OUT/btmon.txt") Read Blob PDUs," \
     "$(grep -c 'ATT: Handle Value Indication' "$OUT/btmon.txt") indications," \
     "$(grep -c 'ATT: Handle Value Confirmation' "$OUT/btmon.txt") confirmations (not checks: btmon drops packets)"
echo "scenario passed in $(elapsed) s"
