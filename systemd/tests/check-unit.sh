#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Checks systemd/gattd.service, systemd/gattd@.service and systemd/gattd.sysusers:
#  0. gattd@.service is gattd.service but for the instance's names (the lines below).
#  1. `systemd-analyze verify` prints nothing and succeeds (the template as gattd@hci1). It insists that ExecStart's
#     binary exists, so, unless /usr/bin/gattd is installed, the check runs in a private
#     mount namespace with an overlay on /usr/bin holding a copy of /bin/true as gattd;
#     the host's /usr/bin is never written.
#  2. `systemd-analyze security --offline=true` reports an exposure of at most 2.0
#     (the line is printed; systemd/README.md quotes it).
#  3. `systemd-sysusers` accepts gattd.sysusers in a scratch root and creates user gattd
#     in groups gattd and bluetooth.
# Exit status 0 only if all pass; 77 (skip) without root when the overlay is needed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
unit="$(dirname "$here")/gattd.service"
sysusers="$(dirname "$here")/gattd.sysusers"
template="$(dirname "$here")/gattd@.service"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# The template differs from gattd.service only in its comments and these lines.
settings=$(mktemp -d)
grep -v '^#' "$unit" >"$settings/plain"
grep -v '^#' "$template" >"$settings/template"
differences=$(diff "$settings/plain" "$settings/template" | grep '^[<>]' || true)
rm -rf "$settings"
expected='< ConditionPathExists=/etc/gattd/gattd.json
< Description=Bluetooth LE peripheral daemon (GATT server)
< ExecStart=/usr/bin/gattd --config /etc/gattd/gattd.json
< StateDirectory=gattd
> ConditionPathExists=/etc/gattd/%i.json
> Description=Bluetooth LE peripheral daemon (GATT server) on %i
> ExecStart=/usr/bin/gattd --instance %i --adapter %i --config /etc/gattd/%i.json
> StateDirectory=gattd/%i'
if [ "$(printf '%s\n' "$differences" | sort)" = "$(printf '%s\n' "$expected" | sort)" ]; then
    echo "ok   gattd@.service is gattd.service with the instance's names"
else
    fail "gattd@.service and gattd.service differ in more than the instance's names: $differences"
fi

# The template is verified as an instance: a copy named gattd@hci1.service.
instance_dir=$(mktemp -d)
cp "$template" "$instance_dir/gattd@hci1.service"
if [ -x /usr/bin/gattd ]; then
    verify_output=$(systemd-analyze verify "$unit" "$instance_dir/gattd@hci1.service" 2>&1) && verify_rc=0 || verify_rc=$?
elif [ "$(id -u)" = 0 ]; then
    scratch=$(mktemp -d)
    mkdir "$scratch/upper" "$scratch/work"
    cp /bin/true "$scratch/upper/gattd"
    verify_output=$(unshare --mount --propagation private sh -c '
        mount -t overlay overlay -o "lowerdir=/usr/bin,upperdir=$1/upper,workdir=$1/work" /usr/bin &&
        systemd-analyze verify "$2" "$3"' sh "$scratch" "$unit" "$instance_dir/gattd@hci1.service" 2>&1) && verify_rc=0 || verify_rc=$?
    rm -rf "$scratch"
else
    echo "SKIP: /usr/bin/gattd is not installed and the overlay needs root"; exit 77
fi
if [ "$verify_rc" = 0 ] && [ -z "$verify_output" ]; then
    echo "ok   systemd-analyze verify gattd.service gattd@hci1.service"
else
    fail "systemd-analyze verify (rc $verify_rc): $verify_output"
fi

score_line=$(systemd-analyze security --offline=true "$unit" 2>&1 | grep 'Overall exposure level') || true
echo "     $score_line"
score=$(printf '%s' "$score_line" | sed -n 's/.*: \([0-9][0-9]*\.[0-9]\).*/\1/p')
if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
    echo "ok   exposure $score <= 2.0"
else
    fail "exposure '$score' is above 2.0 or unreadable: $score_line"
fi
instance_score=$(systemd-analyze security --offline=true "$instance_dir/gattd@hci1.service" 2>&1 |
    sed -n 's/.*Overall exposure level.*: \([0-9][0-9]*\.[0-9]\).*/\1/p')
[ "$instance_score" = "$score" ] && echo "ok   gattd@hci1.service: the same exposure, $instance_score" ||
    fail "gattd@hci1.service's exposure '$instance_score' is not gattd.service's $score"
rm -rf "$instance_dir"

root=$(mktemp -d)
mkdir -p "$root/etc"
: > "$root/etc/passwd"; : > "$root/etc/group"
printf 'bluetooth:x:109:\n' > "$root/etc/group"
if systemd-sysusers --root="$root" "$sysusers" >/dev/null 2>&1 &&
   grep -q '^gattd:x:[0-9]*:[0-9]*:.*:/usr/sbin/nologin$' "$root/etc/passwd" &&
   grep -q '^gattd:x:[0-9]*:$' "$root/etc/group" &&
   grep -q '^bluetooth:x:109:gattd$' "$root/etc/group"; then
    echo "ok   systemd-sysusers creates gattd in groups gattd and bluetooth"
else
    fail "systemd-sysusers: $(cat "$root/etc/passwd" "$root/etc/group")"
fi
rm -rf "$root"

[ "$failures" = 0 ] && echo "all unit checks passed" || echo "$failures unit check(s) failed"
exit "$failures"
