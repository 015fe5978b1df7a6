# SPDX-License-Identifier: MIT
"""Benchmark contender: bluezero (PyPI) Peripheral, used the way its docs show.

rw characteristic: read/write, initial value 00 11 22 33, no read callback
(bluezero serves the stored Value; it ignores `offset`). Notify characteristic:
4-byte little-endian sequence number set with `set_value` from the
notify_callback-started source: BENCH_NOTIFY=timer -> GLib.timeout_add(1 ms),
BENCH_NOTIFY=flood -> GLib.idle_add.
"""
import os

from bluezero import adapter, peripheral
from gi.repository import GLib

SVC_UUID = "12345678-1234-5678-1234-56789abcdef0"
RW_UUID = "12345678-1234-5678-1234-56789abcdef1"
SEQ_UUID = "12345678-1234-5678-1234-56789abcdef2"

state = {"seq": 0, "source": None}
flood = os.environ.get("BENCH_NOTIFY") == "flood"


def on_notify(notifying, characteristic):
    if notifying and state["source"] is None:
        def tick():
            s = state["seq"]
            characteristic.set_value([s & 0xFF, (s >> 8) & 0xFF, (s >> 16) & 0xFF, s >> 24])
            state["seq"] = (s + 1) & 0xFFFFFFFF
            return True
        state["source"] = GLib.idle_add(tick) if flood else GLib.timeout_add(1, tick)
    elif not notifying and state["source"] is not None:
        GLib.source_remove(state["source"])
        state["source"] = None


def main():
    address = list(adapter.Adapter.available())[0].address
    p = peripheral.Peripheral(address, local_name="bench")
    p.add_service(srv_id=1, uuid=SVC_UUID, primary=True)
    p.add_characteristic(srv_id=1, chr_id=1, uuid=RW_UUID, value=[0x00, 0x11, 0x22, 0x33],
                         notifying=False, flags=["read", "write"])
    p.add_characteristic(srv_id=1, chr_id=2, uuid=SEQ_UUID, value=[0, 0, 0, 0],
                         notifying=False, flags=["notify"], notify_callback=on_notify)
    p.publish()


if __name__ == "__main__":
    main()
