#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Wi-Fi provisioning over BLE: this program decides the credentials a phone writes.

It serves wifi-provisioning-program.json with gattd (README.md next to this file):

- a write to `wifi-credentials` (`SSID`, newline, passphrase; only over an encrypted link,
  bluetoothd checks that) is applied before it is accepted: with NetworkManager
  (`nmcli --wait 8 device wifi connect SSID password PASSPHRASE`), or with --wpa-dir DIR
  as a wpa_supplicant file DIR/wpa_supplicant-IFACE.conf holding the SSID and the PSK derived
  from the passphrase (never the passphrase itself). The central gets ATT error 0x81 for a
  value that is not `SSID\\nPASSPHRASE` (passphrase 8 to 63 characters), 0x80 when nmcli or
  the file write fails; success notifies the new status;
- a read of `wifi-status` is answered now: `connected SSID` or `disconnected` (nmcli), or
  `configured SSID` / `not configured` (--wpa-dir).

The passphrase is never printed or logged. Run as root (nmcli and /etc/wpa_supplicant need it).

    wifi-provisioning.py [--wpa-dir /etc/wpa_supplicant [--interface wlan0]] [--instance hci1]
"""

import argparse
import asyncio
import hashlib
import os
import re
import tempfile

import gattd

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--wpa-dir", help="write a wpa_supplicant file here instead of asking NetworkManager")
parser.add_argument("--interface", default="wlan0", help="with --wpa-dir: the file is wpa_supplicant-IFACE.conf")
parser.add_argument("--instance", help="the gattd instance (gattd@INSTANCE) to serve with")
args = parser.parse_args()
app = gattd.Peripheral(instance=args.instance)
wpa_file = os.path.join(args.wpa_dir, "wpa_supplicant-%s.conf" % args.interface) if args.wpa_dir else None


async def nmcli(*argv):
    process = await asyncio.create_subprocess_exec("nmcli", *argv, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace").strip()


async def status():
    if wpa_file:
        try:
            with open(wpa_file) as f:
                ssid = re.search(r"^\s*ssid=([0-9a-f]+)$", f.read(), re.M)
            return "configured " + bytes.fromhex(ssid.group(1)).decode(errors="replace") if ssid else "not configured"
        except FileNotFoundError:
            return "not configured"
    code, out, _ = await nmcli("-t", "-f", "ACTIVE,SSID", "device", "wifi", "list")
    active = [line[4:].replace("\\:", ":") for line in out.splitlines() if line.startswith("yes:")]
    return "connected " + active[0] if code == 0 and active else "disconnected"


def write_wpa_file(ssid, passphrase):
    psk = hashlib.pbkdf2_hmac("sha1", passphrase.encode(), ssid.encode(), 4096, 32).hex()
    text = ("# written by gattd's wifi-provisioning.py\nctrl_interface=DIR=/run/wpa_supplicant GROUP=netdev\n"
            "network={\n\tssid=%s\n\tpsk=%s\n}\n" % (ssid.encode().hex(), psk))
    fd, temporary = tempfile.mkstemp(dir=args.wpa_dir, prefix=".wifi-provisioning-")
    try:
        with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600, the PSK opens the network
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, wpa_file)
    except BaseException:
        os.unlink(temporary)
        raise


@app.on_read("wifi-status")
async def read_status(request):
    return await status()


@app.on_write("wifi-credentials")
async def write_credentials(value, request):
    try:
        ssid, passphrase = value.decode().split("\n")
    except ValueError:
        raise gattd.AttError(0x81, "expected SSID, newline, passphrase") from None
    if not ssid or not 8 <= len(passphrase) <= 63:
        raise gattd.AttError(0x81, "an SSID and a passphrase of 8 to 63 characters")
    who = request.address or request.device or "a central"
    if wpa_file:
        try:
            write_wpa_file(ssid, passphrase)
        except OSError as error:
            print("wifi: cannot write %s: %s" % (wpa_file, error.strerror), flush=True)
            raise gattd.AttError(0x80, "not saved") from None
    else:
        code, _, err = await nmcli("--wait", "8", "device", "wifi", "connect", ssid, "password", passphrase)
        if code != 0:
            print("wifi: %s from %s: nmcli failed: %s" % (ssid, who, err), flush=True)
            raise gattd.AttError(0x80, "nmcli failed")
    print("wifi: %s applied for %s" % (ssid, who), flush=True)
    asyncio.ensure_future(notify_status())  # once this write is accepted


async def notify_status():
    await app.set("wifi-status", await status())  # stored, and notified to subscribers


@app.on_start
async def started():
    print("wifi-provisioning: serving %s" % (wpa_file or "NetworkManager"), flush=True)
    await app.set("wifi-status", await status())


app.run()
