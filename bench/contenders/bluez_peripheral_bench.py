# SPDX-License-Identifier: MIT
"""Benchmark contender: bluez-peripheral (PyPI), a Service with decorated
characteristics as its README shows.

rw characteristic: read/write, value 00 11 22 33 (getter honours `offset`),
setter stores the value. Notify characteristic: 4-byte little-endian sequence
number pushed with `changed()`; bluez-peripheral has no StartNotify hook, so
`on_start_notify` wraps its handler to start the pacing loop (asyncio_pacing).
"""
import asyncio

from bluez_peripheral.gatt.characteristic import CharacteristicFlags as CharFlags
from bluez_peripheral.gatt.characteristic import characteristic
from bluez_peripheral.gatt.service import Service
from bluez_peripheral.util import Adapter, get_message_bus

from asyncio_pacing import run_notifier, seq_bytes

SVC_UUID = "12345678-1234-5678-1234-56789abcdef0"
RW_UUID = "12345678-1234-5678-1234-56789abcdef1"
SEQ_UUID = "12345678-1234-5678-1234-56789abcdef2"


def on_start_notify(hook):
    """bluez-peripheral has no subscription callback: wrap the StartNotify
    handler that dbus-next calls (`_Method.fn`, looked up per call)."""
    m = characteristic.StartNotify.__dict__["__DBUS_METHOD"]
    original = m.fn

    def start_notify(self):
        original(self)
        hook(self)
    m.fn = start_notify


class BenchService(Service):
    def __init__(self):
        self._value = bytearray(b"\x00\x11\x22\x33")
        super().__init__(SVC_UUID, True)

    @characteristic(RW_UUID, CharFlags.READ | CharFlags.WRITE)
    def rw(self, options):
        return bytes(self._value[options.offset:])

    @rw.setter
    def rw(self, value, options):
        self._value[options.offset:] = value

    @characteristic(SEQ_UUID, CharFlags.NOTIFY)
    def seq(self, options):
        return bytes(4)


async def main():
    bus = await get_message_bus()
    service = BenchService()
    adapter = await Adapter.get_first(bus)
    loop = asyncio.get_running_loop()
    tasks = []

    def start():
        if not tasks or tasks[-1].done():
            tasks.append(loop.create_task(run_notifier(
                bus, lambda s: service.seq.changed(seq_bytes(s)), lambda: service.seq._notify)))

    on_start_notify(lambda char: start() if char is service.seq else None)
    await service.register(bus, adapter=adapter)
    await bus.wait_for_disconnect()


if __name__ == "__main__":
    asyncio.run(main())
