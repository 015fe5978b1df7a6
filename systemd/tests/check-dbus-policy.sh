#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Checks systemd/org.gattd.conf (and org.gattd.instances.conf, for gattd@NAME's
# org.gattd.NAME) on a private dbus-daemon with a system-like default policy,
# with users created from systemd/gattd.sysusers. Runs, as root, inside a private mount
# namespace where /etc/passwd and /etc/group are replaced by temporary copies, so the
# host's accounts are never touched. Clients run under other uids through setpriv.
# Prints one "ok"/"FAIL" line per check; exit status 0 only if all pass.
# Needs: root, unshare, dbus-daemon, dbus-send, setpriv, systemd-sysusers, python3-dbus.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
unitdir=$(dirname "$here")

if [ "${GATTD_POLICY_INNER:-}" != 1 ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
    exec env GATTD_POLICY_INNER=1 unshare --mount --propagation private "$0" "$@"
fi

work=$(mktemp -d)
chmod 0755 "$work"
daemon_pid=""
service_pid=""
cleanup() {
    [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null || true
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Accounts: the host's plus gattd (from our sysusers file) and an operator in group gattd.
mkdir -p "$work/root/etc"
cp /etc/passwd /etc/group "$work/root/etc/"
[ -e /etc/shadow ] && cp /etc/shadow "$work/root/etc/"
[ -e /etc/gshadow ] && cp /etc/gshadow "$work/root/etc/"
systemd-sysusers --root="$work/root" "$unitdir/gattd.sysusers" >/dev/null 2>&1
printf 'u gattdop - "gattd operator" /\nm gattdop gattd\n' > "$work/operator.conf"
systemd-sysusers --root="$work/root" "$work/operator.conf" >/dev/null 2>&1
mount --bind "$work/root/etc/passwd" /etc/passwd
mount --bind "$work/root/etc/group" /etc/group

cat > "$work/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>$unitdir/org.gattd.conf</include>
  <include>$unitdir/org.gattd.instances.conf</include>
</busconfig>
CONF

failures=0
check() { # name expected-substring actual
    if printf '%s' "$3" | grep -q -- "$2"; then echo "ok   $1"; else echo "FAIL $1: wanted '$2', got: $3"; failures=$((failures + 1)); fi
}
as() { # user command...
    user=$1; shift
    setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- "$@" 2>&1 || true
}
call() { # user interface.method [args...]
    user=$1; method=$2; shift 2
    as "$user" dbus-send --bus="unix:path=$work/bus" --print-reply --reply-timeout=5000 \
        --dest=org.gattd /org/gattd/app/char0 "$method" "$@"
}

# dbus-daemon refuses to start on a malformed or invalid policy file.
mkfifo "$work/address" "$work/service.out"
dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile --print-address=3 3>"$work/address" 2>"$work/daemon.log" &
daemon_pid=$!
# The fifo yields the address once the bus listens, or EOF if dbus-daemon exits first.
address=$(timeout 10 head -n 1 "$work/address" || true)
check "dbus-daemon accepts org.gattd.conf and org.gattd.instances.conf" "unix:path=" "$address $(cat "$work/daemon.log")"

check "nobody may not own org.gattd" "denied" "$(as nobody /usr/bin/python3 "$here/policy-service.py" "unix:path=$work/bus")"

setpriv --reuid=gattd --regid=gattd --init-groups -- /usr/bin/python3 "$here/policy-service.py" "unix:path=$work/bus" >"$work/service.out" 2>&1 &
service_pid=$!
service_state=$(timeout 10 head -n 1 "$work/service.out" || echo "no output")
check "gattd owns org.gattd" "ready" "$service_state"

# A program in group gattd serves a handler; gattd (user gattd) calls it, nobody else may.
mkfifo "$work/handler.out"
setpriv --reuid=gattdop --regid=gattdop --init-groups -- /usr/bin/python3 "$here/policy-service.py" "unix:path=$work/bus" --handler >"$work/handler.out" 2>&1 &
handler_pid=$!
handler_name=$(timeout 10 head -n 1 "$work/handler.out" || echo "no output")
handler_read() { as "$1" dbus-send --bus="unix:path=$work/bus" --print-reply --reply-timeout=5000 \
    --dest="$handler_name" /test/handler org.gattd.Handler1.Read string:x dict:string:string: 2>&1; }
check "gattd calls a program's org.gattd.Handler1" "array of bytes" "$(handler_read gattd)"
check "root (gattd run by hand) calls a program's handler" "array of bytes" "$(handler_read root)"
check "nobody may not call a program's handler" "AccessDenied" "$(handler_read nobody)"
kill "$handler_pid" 2>/dev/null || true

check "root calls org.gattd.*" '"pong"' "$(call root org.gattd.Test1.Ping)"
check "root (bluetoothd) calls GattCharacteristic1" "array of bytes" "$(call root org.bluez.GattCharacteristic1.ReadValue dict:string:string:)"
check "group gattd calls org.gattd.*" '"pong"' "$(call gattdop org.gattd.Test1.Ping)"
# The stand-in has no Properties implementation: UnknownMethod proves the bus let the call through.
check "group gattd calls Properties" "UnknownMethod" "$(call gattdop org.freedesktop.DBus.Properties.GetAll string:org.gattd.Test1)"
check "group gattd may not read GATT values" "AccessDenied" "$(call gattdop org.bluez.GattCharacteristic1.ReadValue dict:string:string:)"
check "nobody may not call org.gattd.*" "AccessDenied" "$(call nobody org.gattd.Test1.Ping)"
check "nobody may not call Properties" "AccessDenied" "$(call nobody org.freedesktop.DBus.Properties.GetAll string:org.gattd.Test1)"
check "nobody may not read GATT values" "AccessDenied" "$(call nobody org.bluez.GattCharacteristic1.ReadValue dict:string:string:)"
check "nobody may introspect" "<node" "$(call nobody org.freedesktop.DBus.Introspectable.Introspect)"
manager() { # user method [args...]: a control API call on /org/gattd
    user=$1; method=$2; shift 2
    as "$user" dbus-send --bus="unix:path=$work/bus" --print-reply --reply-timeout=5000 \
        --dest=org.gattd /org/gattd "$method" "$@"
}
check "group gattd calls Manager1.GetStatus" "policy-test" "$(manager gattdop org.gattd.Manager1.GetStatus)"
check "nobody may not call Manager1.GetStatus" "AccessDenied" "$(manager nobody org.gattd.Manager1.GetStatus)"
check "nobody may not call Manager1.SetValue" "AccessDenied" "$(manager nobody org.gattd.Manager1.SetValue string:x array:byte:1)"
check "nobody may not confirm a pairing" "AccessDenied" "$(manager nobody org.gattd.Manager1.ConfirmPairing string:)"
check "nobody may not reject a pairing" "AccessDenied" "$(manager nobody org.gattd.Manager1.RejectPairing string:)"
# Signals: a listener subscribes, then root makes the stand-in emit ValueChanged and a
# marker; what the listener saw before the marker is what the policy let through.
listen() { # user -> the listener's verdict
    fifo="$work/listen.$1"
    mkfifo "$fifo"
    setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups -- \
        /usr/bin/python3 "$here/policy-listener.py" "unix:path=$work/bus" >"$fifo" 2>&1 &
    listener=$!
    exec 4<"$fifo"
    read -r state <&4 || state="no output"
    if [ "$state" = listening ]; then
        manager root org.gattd.Test1.Emit >/dev/null
        read -r state <&4 || state="no verdict"
    fi
    exec 4<&-
    wait "$listener" 2>/dev/null || true
    printf '%s' "$state"
}
check "group gattd receives ValueChanged" "received ValueChanged" "$(listen gattdop)"
check "nobody does not receive ValueChanged" "no ValueChanged" "$(listen nobody)"
# The unit sets PrivateNetwork=yes: a file-system AF_UNIX socket stays reachable from a
# new network namespace (only abstract sockets are per-namespace).
check "bus reachable with PrivateNetwork" '"pong"' "$(unshare --net setpriv --reuid=gattdop --regid=gattdop --init-groups -- dbus-send --bus="unix:path=$work/bus" --print-reply --dest=org.gattd /org/gattd/app/char0 org.gattd.Test1.Ping 2>&1)"

# Instances (gattd@hci1): the same rules for org.gattd.hci1.
check "nobody may not own org.gattd.hci1" "denied" "$(as nobody /usr/bin/python3 "$here/policy-service.py" "unix:path=$work/bus" --name org.gattd.hci1)"
check "gattd may not own org.gattdx (a prefix is a whole name element)" "denied" "$(as gattd /usr/bin/python3 "$here/policy-service.py" "unix:path=$work/bus" --name org.gattdx)"
mkfifo "$work/instance.out"
setpriv --reuid=gattd --regid=gattd --init-groups -- /usr/bin/python3 "$here/policy-service.py" "unix:path=$work/bus" --name org.gattd.hci1 >"$work/instance.out" 2>&1 &
instance_pid=$!
check "gattd owns org.gattd.hci1" "ready" "$(timeout 10 head -n 1 "$work/instance.out" || echo "no output")"
instance() { # user method [args...]: a call to the instance
    user=$1; method=$2; path=$3; shift 3
    as "$user" dbus-send --bus="unix:path=$work/bus" --print-reply --reply-timeout=5000 \
        --dest=org.gattd.hci1 "$path" "$method" "$@"
}
check "root calls org.gattd.hci1's Manager1" "policy-test" "$(instance root org.gattd.Manager1.GetStatus /org/gattd)"
check "group gattd calls org.gattd.hci1's Manager1" "policy-test" "$(instance gattdop org.gattd.Manager1.GetStatus /org/gattd)"
check "group gattd may not read org.gattd.hci1's GATT values" "AccessDenied" "$(instance gattdop org.bluez.GattCharacteristic1.ReadValue /org/gattd/app/char0 dict:string:string:)"
check "root (bluetoothd) reads org.gattd.hci1's GATT values" "array of bytes" "$(instance root org.bluez.GattCharacteristic1.ReadValue /org/gattd/app/char0 dict:string:string:)"
check "nobody may not call org.gattd.hci1's Manager1" "AccessDenied" "$(instance nobody org.gattd.Manager1.GetStatus /org/gattd)"
check "nobody may introspect org.gattd.hci1" "<node" "$(instance nobody org.freedesktop.DBus.Introspectable.Introspect /org/gattd)"
listen_instance() { # user -> the listener's verdict on org.gattd.hci1's signals
    fifo="$work/listen-instance.$1"
    mkfifo "$fifo"
    setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups -- \
        /usr/bin/python3 "$here/policy-listener.py" "unix:path=$work/bus" org.gattd.hci1 >"$fifo" 2>&1 &
    listener=$!
    exec 4<"$fifo"
    read -r state <&4 || state="no output"
    if [ "$state" = listening ]; then
        instance root org.gattd.Test1.Emit /org/gattd >/dev/null
        read -r state <&4 || state="no verdict"
    fi
    exec 4<&-
    wait "$listener" 2>/dev/null || true
    printf '%s' "$state"
}
check "group gattd receives org.gattd.hci1's ValueChanged" "received ValueChanged" "$(listen_instance gattdop)"
check "nobody does not receive org.gattd.hci1's ValueChanged" "no ValueChanged" "$(listen_instance nobody)"
kill "$instance_pid" 2>/dev/null || true

[ "$failures" = 0 ] && echo "all policy checks passed" || echo "$failures policy check(s) failed"
exit "$failures"
