#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mgmt_adv.py INDEX LENGTH: asks the kernel itself (the Bluetooth management socket, not
bluetoothd) to add an advertising instance whose advertising data is LENGTH bytes (one
manufacturer-specific AD structure), prints the mgmt status and removes the instance again.
Exit 0 when the kernel accepted it, 1 when it refused it, 2 on a harness error. Shows that
the kernel's legacy limit is the 31 bytes gattd --check applies.
"""
import ctypes
import os
import socket
import struct
import sys

AF_BLUETOOTH, BTPROTO_HCI, HCI_CHANNEL_CONTROL, HCI_DEV_NONE = 31, 1, 3, 0xFFFF
ADD_ADVERTISING, REMOVE_ADVERTISING = 0x003E, 0x003F
INSTANCE = 1  # hci1, the central's adapter, advertises nothing else


def command(fd, opcode, index, params):
    os.write(fd, struct.pack("<HHH", opcode, index, len(params)) + params)
    while True:
        data = os.read(fd, 1024)
        event, _, length = struct.unpack("<HHH", data[:6])
        if event in (0x0001, 0x0002):  # Command Complete / Command Status
            op, status = struct.unpack("<HB", data[6:9])
            if op == opcode:
                return status


def main():
    index, length = int(sys.argv[1]), int(sys.argv[2])
    fd = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, BTPROTO_HCI).detach()
    address = struct.pack("<HHH", AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.bind(fd, ctypes.c_char_p(address), len(address)) != 0:
        print("mgmt: bind failed: %s" % os.strerror(ctypes.get_errno()))
        return 2
    data = bytes([length - 1, 0xFF, 0xFE, 0xFF]) + bytes(length - 4)
    params = struct.pack("<BIHHBB", INSTANCE, 0, 0, 0, len(data), 0) + data
    status = command(fd, ADD_ADVERTISING, index, params)
    print("kernel: %d bytes of advertising data -> mgmt status 0x%02x%s"
          % (length, status, " (accepted)" if status == 0 else " (refused)"))
    if status == 0:
        command(fd, REMOVE_ADVERTISING, index, struct.pack("<B", INSTANCE))
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
