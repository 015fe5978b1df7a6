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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--config", required=True)
    args = p.parse_args()
    config = json.load(open(args.config))
    names = {}
    for svc in config.get("services", []):
        names[normalize_uuid(svc["uuid"])] = svc["id"]
        for ch in svc.get("characteristics", []):
            names[normalize_uuid(ch["uuid"])] = ch["id"]

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
    for c in chrcs:
        name = names.get(str(c["uuid"]), str(c["uuid"]))
        if "write" in c["flags"]:
            code = sd.WriteAtt(c["path"], dbus.ByteArray(b"hi"), zero, mtu, DEVICE, False, timeout=20)
            print("wrote %s: 'hi'%s" % (name, "" if not code else " -> ATT error 0x%02x" % code))
        if "write" in c["flags"] and "notify" in c["flags"]:
            sd.Subscribe(c["path"], DEVICE)
            sd.WriteAtt(c["path"], dbus.ByteArray(b"\x2a"), zero, mtu, DEVICE, False, timeout=20)
            try:
                values = sd.WaitForNotifications(c["path"], dbus.UInt32(1), dbus.UInt32(5000), timeout=10)
                print("notification: %s = %s" % (name, hexbytes(values[-1])))
            except dbus.exceptions.DBusException as e:
                print("notification: none on %s (%s)" % (name, e.get_dbus_message()))
            sd.Unsubscribe(c["path"], DEVICE)
    warnings = list(sd.Warnings())
    print("stand-in warnings: %s" % ("; ".join(warnings) if warnings else "none"))


if __name__ == "__main__":
    main()
