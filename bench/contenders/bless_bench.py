# SPDX-License-Identifier: MIT
"""Benchmark contender: bless (PyPI), BlessServer used the way its README shows.

rw characteristic: read/write, value 00 11 22 33 served by read_request_func
(bless ignores `offset`), write_request_func stores the value. Notify
characteristic: 4-byte little-endian sequence number, set on the
characteristic and pushed with `update_value`; paced by asyncio_pacing.
"""
import asyncio

from bless import (BlessServer, GATTAttributePermissions,
                   GATTCharacteristicProperties)

from asyncio_pacing import run_notifier, seq_bytes

SVC_UUID = "12345678-1234-5678-1234-56789abcdef0"
RW_UUID = "12345678-1234-5678-1234-56789abcdef1"
SEQ_UUID = "12345678-1234-5678-1234-56789abcdef2"


async def main():
    loop = asyncio.get_running_loop()
    server = BlessServer(name="bench", loop=loop)
    server.read_request_func = lambda characteristic, **kwargs: characteristic.value
    def on_write(characteristic, value, **kwargs):
        characteristic.value = value
    server.write_request_func = on_write
    await server.add_new_service(SVC_UUID)
    await server.add_new_characteristic(
        SVC_UUID, RW_UUID,
        GATTCharacteristicProperties.read | GATTCharacteristicProperties.write,
        bytearray(b"\x00\x11\x22\x33"),
        GATTAttributePermissions.readable | GATTAttributePermissions.writeable)
    await server.add_new_characteristic(
        SVC_UUID, SEQ_UUID, GATTCharacteristicProperties.notify, bytearray(4),
        GATTAttributePermissions.readable)
    state = {"on": False, "task": None}
    seq_char = server.get_characteristic(SEQ_UUID)

    def emit(seq):
        seq_char.value = bytearray(seq_bytes(seq))
        server.update_value(SVC_UUID, SEQ_UUID)

    def start(_):
        state["on"] = True
        if state["task"] is None or state["task"].done():
            state["task"] = loop.create_task(run_notifier(server.bus, emit, lambda: state["on"]))

    def stop(_):
        state["on"] = False

    await server.start()
    server.app.StartNotify = start
    server.app.StopNotify = stop
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
