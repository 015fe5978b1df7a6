# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What every scenario starts with (sourced right after `VM=${GATTD_VM_DIR:?}`): OUT, the
# guest's results directory; ROOT, the repository; and the helpers below.
OUT=${GATTD_VM_OUT:?}
ROOT=$(cd "$VM/../.." && pwd)

# SLOW: how many times as long as natively the gattd and gattctl under test may take (run-suite
# --slow: 1 natively, 5 for the arm64 ones under qemu-user). wait_for_line and wait_count
# multiply their SECONDS by it, and bluezcentral.py (GATTD_VM_SLOW) its bounds; `bound N`
# is N times SLOW, for the other bounds on waiting for gattd or gattctl. What gattd must do on
# time (a window that closes, a timer) is checked as natively, with SLOW times the slack.
SLOW=${GATTD_VM_SLOW:-1}
[[ "$SLOW" =~ ^[1-9][0-9]*$ ]] || { echo "FAIL: GATTD_VM_SLOW=$SLOW is not a whole number >= 1"; exit 1; }
bound() { echo $(( $1 * SLOW )); }

# scenario_binaries: GATTD_BIN (required; Tests/vm/run-suite --gattd sets it) and GATTCTL_BIN
# (default: next to GATTD_BIN), each checked to be executable; a missing one ends the
# scenario with a FAIL.
scenario_binaries() {
    [ -n "${GATTD_BIN:-}" ] || { echo "FAIL: GATTD_BIN is not set (Tests/vm/run-suite --gattd BIN sets it)"; exit 1; }
    GATTCTL_BIN=${GATTCTL_BIN:-$(dirname "$GATTD_BIN")/gattctl}
    local f
    for f in "$GATTD_BIN" "$GATTCTL_BIN"; do
        [ -x "$f" ] || { echo "FAIL: $f missing or not executable (set GATTD_BIN / GATTCTL_BIN)"; exit 1; }
    done
}

# wait_for_line FILE REGEX SECONDS: waits until FILE has a line matching REGEX (SECONDS
# times SLOW).
wait_for_line() {
    local file=$1 regex=$2 secs; secs=$(bound "$3")
    local deadline=$(( $(date +%s) + secs ))
    until grep -Eq -- "$regex" "$file" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "FAIL: no line matching '$regex' in $(basename "$file") after $secs s"
            tail -n 20 "$file" 2>/dev/null | sed 's/^/    /'
            return 1
        fi
        sleep 0.2
    done
}

# count FILE REGEX: lines of FILE matching REGEX.
# (0 for a file that does not exist yet).
count() { grep -Ec -- "$2" "$1" 2>/dev/null || { [ -e "$1" ] || echo 0; }; }
# wait_count FILE REGEX N SECONDS: until FILE has at least N lines matching REGEX (SECONDS
# times SLOW).
wait_count() {
    local secs; secs=$(bound "$4")
    local deadline=$(( $(date +%s) + secs ))
    until [ "$(count "$1" "$2")" -ge "$3" ]; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "FAIL: $(basename "$1") has $(count "$1" "$2") lines matching '$2' after $secs s, expected $3"
            tail -n 15 "$1" | sed 's/^/    /'
            return 1
        fi
        sleep 0.2
    done
}

# elapsed: seconds since the scenario started (for the timing lines).
SCENARIO_START=$(date +%s.%N)
elapsed() { awk -v a="$SCENARIO_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# install_gattd_policy: the project's bus policy for org.gattd, plus a guest-only rule that
# lets root own the name (gattd runs as root here, as user gattd under systemd); reloads
# dbus-daemon. Exits the scenario on failure.
install_gattd_policy() {
    cp "$ROOT/systemd/org.gattd.conf" /etc/dbus-1/system.d/org.gattd.conf
    cat >/etc/dbus-1/system.d/gattd-vm-root.conf <<'XML'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><policy user="root"><allow own="org.gattd"/></policy></busconfig>
XML
    dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig >/dev/null \
        || { echo "FAIL: dbus-daemon did not reload its policy"; exit 1; }
}
