#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plays a short central session against gattd through the stand-in, in plain words.

Usage: central_demo.py --address <bus> --config <gattd config.json>
Names come from the config (characteristic ids), attributes are found by UUID.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dbus                                   # noqa: E402
from bluez_rules import normalize_uuid        # noqa: E402
from harness import CONTROL_NAME, CONTROL_PATH, CONTROL_IFACE, DEVICE  # noqa: E402


def hexbytes(b):
    return " ".join("%02x" % x for x in bytes(b))


def fitting(value, low, high):
    """`value` cut or repeated to a length the characteristic takes (minLength...maxLength)."""
    length = min(max(len(value), low), high)
    return (value * (length // max(len(value), 1) + 1))[:length]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--config", required=True)
    args = p.parse_args()
    config = json.load(open(args.config))
    names, bounds = {}, {}
    for svc in config.get("services", []):
        names[normalize_uuid(svc["uuid"])] = svc["id"]
        for ch in svc.get("characteristics", []):
            name = ch.get("id", ch["uuid"])
            names[normalize_uuid(ch["uuid"])] = name
            bounds[name] = (ch.get("minLength", 0), ch.get("maxLength", 512))

    conn = dbus.bus.BusConnection(args.address)
    sd = dbus.Interface(conn.get_object(CONTROL_NAME, CONTROL_PATH, introspect=False), CONTROL_IFACE)
    owner, path = sd.WaitForApplication(dbus.UInt32(15000), timeout=20)
    attrs = sd.Attributes()
    services = [a for a in attrs if a["kind"] == "service"]
    chrcs = [a for a in attrs if a["kind"] == "characteristic"]
    print("registered: %d services, %d characteristics (app %s at %s)" % (len(services), len(chrcs), path, owner))
    mtu, zero = dbus.UInt16(23), dbus.UInt16(0)
    for c in chrcs:
        name = names.get(str(c["uuid"]), str(c["uuid"]))
        # Every characteristic: bluetoothd itself refuses what lacks read permission.
        code, value = sd.LongRead(c["path"], mtu, DEVICE, timeout=20)
        print("read %s: %s" % (name, hexbytes(value) if not code else "ATT error 0x%02x" % code))
    failed = False
    for c in chrcs:
        name = names.get(str(c["uuid"]), str(c["uuid"]))
        if "write" not in c["flags"]:
            continue
        low, high = bounds.get(name, (0, 512))
        value = fitting(b"hi", low, high)
        code = sd.WriteAtt(c["path"], dbus.ByteArray(value), zero, mtu, DEVICE, False, timeout=20)
        if code:
            print("wrote %s: %s -> ATT error 0x%02x" % (name, hexbytes(value), code))
            continue
        back = bytes(sd.LongRead(c["path"], mtu, DEVICE, timeout=20)[1]) if "read" in c["flags"] else value
        print("wrote %s: %s, read back %s" % (name, hexbytes(value), hexbytes(back)))
        if back != value:
            print("FAIL: %s reads back %s after writing %s" % (name, hexbytes(back), hexbytes(value)))
            failed = True
        if "notify" in c["flags"]:
            sd.Subscribe(c["path"], DEVICE)
            again = fitting(b"\x2a", low, high)
            code = sd.WriteAtt(c["path"], dbus.ByteArray(again), zero, mtu, DEVICE, False, timeout=20)
            if code:
                print("notification: not tried on %s, the write was refused with ATT error 0x%02x" % (name, code))
            else:
                try:
                    values = sd.WaitForNotifications(c["path"], dbus.UInt32(1), dbus.UInt32(5000), timeout=10)
                    print("notification: %s = %s" % (name, hexbytes(values[-1])))
                except dbus.exceptions.DBusException as e:
                    print("FAIL: no notification on %s after an accepted write (%s)" % (name, e.get_dbus_message()))
                    failed = True
            sd.Unsubscribe(c["path"], DEVICE)
    warnings = list(sd.Warnings())
    print("stand-in warnings: %s" % ("; ".join(warnings) if warnings else "none"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
