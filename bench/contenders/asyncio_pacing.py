# SPDX-License-Identifier: MIT
"""Notification pacing shared by the asyncio (dbus-next) contenders.

`run_notifier(bus, emit, is_on)` calls `emit(seq)` while `is_on()`:
BENCH_NOTIFY=timer -> once per 1 ms on a drift-free schedule (loop.time());
BENCH_NOTIFY=flood -> as fast as dbus-next writes: after each emit, when the
bus writer holds 16 or more unsent messages, await the future of the newest
one (a tight `asyncio.sleep(0)` loop stalls dbus-next instead).
"""
import asyncio
import os

FLOOD = os.environ.get("BENCH_NOTIFY") == "flood"


async def _drain(bus):
    writer = bus._writer  # dbus-next keeps (bytes, fds, future) tuples here
    queue = writer.messages._queue
    if len(queue) >= 16:
        await queue[-1][2]


async def run_notifier(bus, emit, is_on):
    loop = asyncio.get_running_loop()
    seq = 0
    deadline = loop.time()
    while is_on():
        emit(seq)
        seq = (seq + 1) & 0xFFFFFFFF
        if FLOOD:
            await _drain(bus)
            await asyncio.sleep(0)
        else:
            deadline += 0.001
            await asyncio.sleep(max(0.0, deadline - loop.time()))


def seq_bytes(seq):
    return bytes((seq & 0xFF, (seq >> 8) & 0xFF, (seq >> 16) & 0xFF, seq >> 24))
