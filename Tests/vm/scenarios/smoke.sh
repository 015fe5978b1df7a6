#!/bin/bash
# SPDX-License-Identifier: MIT
# smoke: the stack is up: both emulated controllers are adapters of the real bluetoothd.
set -euo pipefail
objs=$(dbus-send --system --print-reply --dest=org.bluez / org.freedesktop.DBus.ObjectManager.GetManagedObjects)
for addr in "$HCI0_ADDR" "$HCI1_ADDR"; do
    grep -q "string \"$addr\"" <<<"$objs" || { echo "FAIL: adapter $addr not on the bus"; exit 1; }
    echo "adapter $addr on the bus"
done
bluetoothd_version=$(/usr/libexec/bluetooth/bluetoothd --version)
echo "bluetoothd $bluetoothd_version, kernel $(uname -r)"
free -m | awk '/Mem:/ {print "guest memory used " $3 " MB of " $2}'
