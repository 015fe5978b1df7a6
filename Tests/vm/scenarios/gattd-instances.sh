#!/bin/bash
# SPDX-License-Identifier: MIT
# gattd-instances (run-guest --init systemd --controllers 3): one gattd per radio as the
# package installs it. gattd@hci0 and gattd@hci1 (systemd/gattd@.service, the project's
# unit unchanged) serve /etc/gattd/hci0.json and hci1.json; a central on hci2 finds each
# at its adapter's address and reads that instance's own value (instances.py);
# `gattctl --instance` reaches the right one; each keeps its state in
# /var/lib/gattd/<instance> and the central's write lands in hci1's only;
# `gattd --doctor --instance` asks the right one.
# Environment: GATTD_BIN (gattctl next to it).
set -uo pipefail
VM=${GATTD_VM_DIR:?}
. "$VM/scenarios/lib.sh"
scenario_binaries
[ "$(cat /proc/1/comm)" = systemd ] || { echo "FAIL: PID 1 is $(cat /proc/1/comm), not systemd"; exit 1; }
[ -n "${HCI2_ADDR:-}" ] || { echo "FAIL: no hci2 (run-guest --controllers 3)"; exit 1; }

DESTDIR='' PREFIX=/usr SYSCONFDIR=/etc "$ROOT/scripts/install-files" "$(dirname "$GATTD_BIN")" >/dev/null \
    || { echo "FAIL: scripts/install-files"; exit 1; }
systemd-sysusers || { echo "FAIL: systemd-sysusers"; exit 1; }
for instance in hci0 hci1; do
    cat >/etc/gattd/$instance.json <<JSON
{
  "version": 1,
  "services": [{"id": "radio", "uuid": "12345678-1234-5678-1234-56789abcd000", "characteristics": [
    {"id": "label", "uuid": "12345678-1234-5678-1234-56789abcd001", "flags": ["read"], "value": {"utf8": "radio $instance"}},
    {"id": "note", "uuid": "12345678-1234-5678-1234-56789abcd002", "flags": ["read", "write"], "value": {"utf8": "empty"}}
  ]}],
  "advertisements": [{"id": "main", "localName": "gattd-$instance"}]
}
JSON
done
systemctl daemon-reload
systemctl reload dbus.service || { echo "FAIL: systemctl reload dbus (for the policies)"; exit 1; }
systemctl start gattd@hci0.service gattd@hci1.service ||
    { echo "FAIL: systemctl start gattd@hci0 gattd@hci1"; journalctl -u 'gattd@*' --no-pager -n 30; exit 1; }
for instance in hci0 hci1; do
    state=$(systemctl show -p ActiveState,SubState gattd@$instance.service | tr '\n' ' ')
    case "$state" in *ActiveState=active*SubState=running*) ;;
        *) echo "FAIL: gattd@$instance: $state"; journalctl -u gattd@$instance --no-pager -n 20; exit 1 ;; esac
    # The owner of org.gattd.<instance> is that unit's process.
    busctl --system --no-pager status org.gattd.$instance | grep -qx "Unit=gattd@$instance.service" ||
        { echo "FAIL: org.gattd.$instance is not owned by gattd@$instance"; busctl --system status org.gattd.$instance; exit 1; }
    adapter=$("$GATTCTL_BIN" --instance $instance status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["adapter"])')
    [ "$adapter" = $instance ] || { echo "FAIL: gattctl --instance $instance status: adapter '$adapter'"; exit 1; }
    "$GATTCTL_BIN" --instance $instance get label | grep -q "\"radio $instance\"" ||
        { echo "FAIL: gattctl --instance $instance get label"; exit 1; }
done
echo "gattd@hci0 and gattd@hci1 active, each on its adapter and its bus name ($(elapsed) s)"
"$GATTCTL_BIN" status >/dev/null 2>&1 && { echo "FAIL: plain org.gattd answered; only instances run"; exit 1; }

/usr/bin/python3 -u "$VM/instances.py" --adapter hci2 "$HCI0_ADDR=radio hci0" "$HCI1_ADDR=radio hci1" || exit 1

# State apart: the write to hci1's note is in /var/lib/gattd/hci1 only (saved before the
# central's write was answered).
for instance in hci0 hci1; do
    [ "$(stat -c %U /var/lib/gattd/$instance)" = gattd ] || { echo "FAIL: /var/lib/gattd/$instance not gattd's"; exit 1; }
done
written=$(printf 'written to %s' "$HCI1_ADDR" | od -An -tx1 | tr -d ' \n')
grep -qi -e "$written" -e "written to $HCI1_ADDR" /var/lib/gattd/hci1/state.json ||
    { echo "FAIL: hci1's state lacks the write"; cat /var/lib/gattd/hci1/state.json; exit 1; }
grep -qi -e "$written" -e "written to" /var/lib/gattd/hci0/state.json 2>/dev/null &&
    { echo "FAIL: hci0's state has hci1's write"; exit 1; }
"$GATTCTL_BIN" --instance hci1 get note | grep -q "written to" || { echo "FAIL: hci1's note"; exit 1; }
"$GATTCTL_BIN" --instance hci0 get note | grep -q '"empty"' || { echo "FAIL: hci0's note changed"; exit 1; }
echo "state apart: /var/lib/gattd/hci0 and /var/lib/gattd/hci1"

gattd --doctor --json --instance hci1 | python3 -c 'import json, sys; s = json.load(sys.stdin)["gattdState"]; sys.exit(0 if s["running"] else 1)' ||
    { echo "FAIL: gattd --doctor --instance hci1 did not find it running"; exit 1; }
echo "scenario passed in $(elapsed) s"
