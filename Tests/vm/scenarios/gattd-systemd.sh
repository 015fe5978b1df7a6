#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-systemd (run-guest --init systemd): gattd as the project installs it: files from
# scripts/install-files into the overlay, user from gattd.sysusers, the project's unit
# (hardened, Type=notify) with a test drop-in (WatchdogSec=3s, RestartSec=1s, config
# configs/full.json, --log-level debug). Checks: `systemctl start` returns only when gattd
# is ready (registered and advertising), the journal has structured fields (GATT_ID=),
# `systemctl reload` works, SIGKILL is restarted (Restart=on-failure), a stopped (SIGSTOP)
# gattd is restarted by the watchdog, and a real central reads back a value it wrote
# before the restarts (StateDirectory under the sandbox). Last, the drop-ins of
# systemd/examples: a hook writes a device node and a file only with them.
# Environment: GATTD_BIN (gattctl next to it), GATTD_CONFIG (default configs/full.json),
#   GATTD_VM_DROPIN (extra [Service] lines for the drop-in, ';'-separated).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
CONFIG=${GATTD_CONFIG:-$VM/configs/full.json}
[ "$(cat /proc/1/comm)" = systemd ] || { echo "FAIL: PID 1 is $(cat /proc/1/comm), not systemd"; exit 1; }
for unit in dbus.service bluetooth.service; do
    state=$(systemctl is-active "$unit")
    [ "$state" = active ] || { echo "FAIL: $unit is $state"; exit 1; }
done
echo "systemd is PID 1; dbus.service and bluetooth.service active ($(elapsed) s)"

show() { systemctl show -p "$1" --value gattd.service; }
# wait_until SECONDS WHAT COMMAND...: polls COMMAND until it succeeds.
wait_until() {
    local secs=$1 deadline=$(( $(date +%s) + $1 )) what=$2; shift 2
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "FAIL: $what not within $secs s; gattd.service: $(systemctl show -p ActiveState,SubState,Result,NRestarts gattd.service | tr '\n' ' ')"
            journalctl -u gattd.service --no-pager -n 15 | sed 's/^/    /'
            exit 1
        fi
        sleep 0.2
    done
}
running_with_new_pid() { [ "$(show ActiveState)/$(show SubState)" = active/running ] && [ "$(show MainPID)" != "$1" ] && [ "$(show MainPID)" != 0 ]; }
journal_has() { journalctl -u gattd.service --no-pager -o cat | grep -Eq -- "$1"; }
central() {
    /usr/bin/python3 -u "$VM/central.py" gattd-again "$@" --config "$CONFIG" --adapter hci1 \
        --peer "$HCI0_ADDR" || exit 1
}

# --- install as a package would, into the overlay -----------------------------------------
DESTDIR='' PREFIX=/usr SYSCONFDIR=/etc "$ROOT/scripts/install-files" "$(dirname "$GATTD_BIN")" \
    || { echo "FAIL: scripts/install-files"; exit 1; }
cp "$CONFIG" /etc/gattd/gattd.json
systemd-sysusers || { echo "FAIL: systemd-sysusers"; exit 1; }
id gattd >/dev/null || { echo "FAIL: no user gattd after systemd-sysusers"; exit 1; }
mkdir -p /etc/systemd/system/gattd.service.d
cat >/etc/systemd/system/gattd.service.d/vm.conf <<'UNIT'
[Service]
WatchdogSec=3s
RestartSec=1s
ExecStart=
ExecStart=/usr/bin/gattd --config /etc/gattd/gattd.json --log-level debug
UNIT
# more [Service] lines for experiments, ';'-separated (e.g. Environment=SWIFT_BACKTRACE=enable=no)
[ -z "${GATTD_VM_DROPIN:-}" ] || tr ';' '\n' <<<"$GATTD_VM_DROPIN" >>/etc/systemd/system/gattd.service.d/vm.conf
systemctl daemon-reload
systemctl reload dbus.service || { echo "FAIL: systemctl reload dbus (for org.gattd.conf)"; exit 1; }
echo "installed: $(id gattd), unit $(systemctl show -p FragmentPath --value gattd.service) + drop-in vm.conf"

# --- start: returns after READY=1 ---------------------------------------------------------
t0=$(date +%s.%N)
systemctl start gattd.service || { echo "FAIL: systemctl start gattd"; journalctl -u gattd --no-pager -n 20; exit 1; }
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
state=$(systemctl show -p ActiveState,SubState,StatusText gattd.service | tr '\n' ' ')
echo "systemctl start gattd returned after $took s: $state"
case "$state" in
    *ActiveState=active*SubState=running*) ;;
    *) echo "FAIL: right after systemctl start: $state, expected active/running"; exit 1 ;;
esac
[ -n "$(show StatusText)" ] || { echo "FAIL: gattd sent no STATUS= text"; exit 1; }
for line in 'GATT application registered' 'advertisement registered'; do
    journal_has "$line" || { echo "FAIL: '$line' not in the journal when systemctl start returned (READY=1 too early)"; exit 1; }
done
echo "ready means served: 'GATT application registered' and 'advertisement registered' logged before READY=1"

central --fresh
journalctl -u gattd.service -o verbose --no-pager >"$OUT/gattd-verbose.txt"
grep -q '^ *GATT_ID=label$' "$OUT/gattd-verbose.txt" \
    || { echo "FAIL: journalctl -u gattd -o verbose has no GATT_ID=label field"; exit 1; }
# The unit's system-call filter lets gattd ask for its scheduler slice: the kernel gave it
# (Linux 6.12+) or kept its own slice, never EPERM.
slice=$(sed -n 's/^ *SCHED_SLICE=//p' "$OUT/gattd-verbose.txt" | head -1)
case "$slice" in
    1000us | "kernel default (custom slices need Linux 6.12)") echo "scheduler slice: $slice (kernel $(uname -r))" ;;
    *) echo "FAIL: the starting line's SCHED_SLICE is '$slice', expected 1000us or the kernel's default"; exit 1 ;;
esac
n=$(journalctl -u gattd.service --no-pager -o cat GATT_ID=label | wc -l)
echo "journal: structured fields ($(grep -c '^ *GATT_ID=' "$OUT/gattd-verbose.txt") GATT_ID= fields; journalctl -u gattd GATT_ID=label: $n lines; $(grep -c '^ *SYSLOG_IDENTIFIER=gattd$' "$OUT/gattd-verbose.txt") entries with SYSLOG_IDENTIFIER=gattd)"

# --- reload -------------------------------------------------------------------------------
pid=$(show MainPID)
systemctl reload gattd.service || { echo "FAIL: systemctl reload gattd"; exit 1; }
wait_until 20 "'reloaded' in the journal" journal_has '^reloaded'
[ "$(show MainPID)" = "$pid" ] || { echo "FAIL: reload changed the main PID"; exit 1; }
echo "systemctl reload gattd: $(journalctl -u gattd.service --no-pager -o cat | grep '^reloaded' | tail -1); same PID $pid"

# --- SIGKILL: Restart=on-failure ----------------------------------------------------------
restarts=$(show NRestarts)
t0=$(date +%s)
systemctl kill -s KILL gattd.service
wait_until 30 "restart after SIGKILL" running_with_new_pid "$pid"
echo "SIGKILL: restarted by systemd in $(( $(date +%s) - t0 )) s (NRestarts $restarts -> $(show NRestarts), PID $pid -> $(show MainPID))"
[ "$(show NRestarts)" -gt "$restarts" ] || { echo "FAIL: NRestarts did not grow"; exit 1; }

# --- SIGSTOP: the watchdog --------------------------------------------------------------
pid=$(show MainPID) restarts=$(show NRestarts)
t0=$(date +%s)
kill -STOP "$pid"
wait_until 40 "watchdog restart of a stopped gattd" running_with_new_pid "$pid"
journalctl -u gattd.service --no-pager | grep -qi 'watchdog timeout' \
    || { echo "FAIL: gattd was restarted but systemd logged no watchdog timeout"; exit 1; }
echo "SIGSTOP: watchdog timeout (WatchdogSec=3s), restarted in $(( $(date +%s) - t0 )) s (PID $pid -> $(show MainPID))"

# --- the central again: advertisement, services, the value written before ----------------
central
# --- hooks under the sandbox: systemd/examples drop-ins ------------------------------------
# A deciding hook writes to a device node (a clone of /dev/kmsg, 1:11, so what it writes is
# seen in dmesg; not one of PrivateDevices=' pseudo devices) and to a file outside the
# state directory. Without drop-ins both writes fail (the private /dev has no such node;
# ProtectSystem=strict), so the hook answers ATT 0x82; with devices.conf and
# writable-paths.conf, their example paths replaced by these, both succeed.
sandbox_central() {
    /usr/bin/python3 -u "$VM/sandbox-central.py" --adapter hci1 --peer "$HCI0_ADDR" "$@" || exit 1
}
mknod -m 0600 /dev/gattd-test-kmsg c 1 11 && chown gattd:gattd /dev/gattd-test-kmsg
mkdir -p /srv/gattd-test && chown gattd:gattd /srv/gattd-test
cp "$VM/configs/sandbox.json" /etc/gattd/gattd.json
systemctl restart gattd.service || { echo "FAIL: systemctl restart gattd (sandbox.json)"; exit 1; }
sandbox_central device=01:0x82 file=02:0x82
! dmesg | grep -q 'gattd-sandbox-test 01' || { echo "FAIL: the device write got through without the drop-in"; exit 1; }
[ ! -e /srv/gattd-test/brightness ] || { echo "FAIL: the file was written without the drop-in"; exit 1; }
echo "sandbox without drop-ins: the hook cannot write /dev/gattd-test-kmsg or /srv/gattd-test (ATT 0x82)"
sed -e 's|^DeviceAllow=/dev/ttyUSB0 rw$|DeviceAllow=/dev/gattd-test-kmsg w|' -e '/^DeviceAllow=\/dev\/gpiochip0/d' \
    "$ROOT/systemd/examples/devices.conf" >/etc/systemd/system/gattd.service.d/devices.conf
getent group dialout >/dev/null || sed -i '/^SupplementaryGroups=dialout$/d' /etc/systemd/system/gattd.service.d/devices.conf
sed -e 's|^ReadWritePaths=.*|ReadWritePaths=/srv/gattd-test|' \
    "$ROOT/systemd/examples/writable-paths.conf" >/etc/systemd/system/gattd.service.d/writable-paths.conf
grep -q '^DeviceAllow=/dev/gattd-test-kmsg w$' /etc/systemd/system/gattd.service.d/devices.conf &&
    grep -q '^ReadWritePaths=/srv/gattd-test$' /etc/systemd/system/gattd.service.d/writable-paths.conf ||
    { echo "FAIL: systemd/examples changed; the substitutions above no longer apply"; exit 1; }
systemctl daemon-reload
systemctl restart gattd.service || { echo "FAIL: systemctl restart gattd with the drop-ins"; journalctl -u gattd --no-pager -n 20; exit 1; }
sandbox_central device=01:ok file=02:ok
dmesg | grep -q 'gattd-sandbox-test 01' || { echo "FAIL: the hook's device write is not in dmesg"; exit 1; }
[ "$(cat /srv/gattd-test/brightness)" = 02 ] || { echo "FAIL: /srv/gattd-test/brightness is not 02"; exit 1; }
echo "sandbox with devices.conf + writable-paths.conf: the hook wrote the device (dmesg: $(dmesg | grep -o 'gattd-sandbox-test 01' | head -1)) and the file (02)"

echo "scenario passed in $(elapsed) s"
