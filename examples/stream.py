#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stream a sensor through gattd without losing a sample.

The characteristic must have `"delivery": "all"` (see stream.json): gattd queues every
value and notifies them in order at its pacing rate. When the queue is full, `update`
returns False and nothing is stored; `ready` returns once gattd has room, and this program
goes on with the sample it was refused. That is CoreBluetooth's `updateValue` returning
false and `peripheralManagerIsReady(toUpdateSubscribers:)`.

Each sample is a 32-bit little-endian sequence number and a 16-bit reading (from
--sensor-file if given, else a sawtooth). The program waits for gattd at start and, when
gattd restarts, goes on from the sample the old gattd did not take. Run it as a member of
group gattd (or root), or with examples/stream.service.

    examples/stream.py --id samples --count 1000
"""

import argparse
import asyncio
import struct
import sys

import gattd

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--id", default="samples", help="characteristic id (delivery: all)")
parser.add_argument("--count", type=int, default=0, help="samples to send; 0 = until interrupted")
parser.add_argument("--sensor-file", help="read each sample's value from this file (e.g. an iio raw value)")
args = parser.parse_args()


def reading(sequence):
    if args.sensor_file:
        with open(args.sensor_file) as f:
            return int(f.read().strip() or 0) & 0xFFFF
    return (sequence * 37) & 0xFFFF


async def main():
    sent = refused = 0
    async with gattd.Peripheral() as app:
        @app.on(gattd.GattdStopped)
        def gone(event):
            print("stream: gattd is gone; waiting for it to come back", file=sys.stderr, flush=True)

        while not args.count or sent < args.count:
            try:
                if await app.update(args.id, struct.pack("<IH", sent, reading(sent))):
                    sent += 1
                else:
                    refused += 1
                    await app.ready(args.id)  # then the same sample again
            except (gattd.NotRunning, gattd.NoReply):
                await app.wait_started()  # gattd is not there (yet): the same sample to the next one
    print("stream: sent %d samples, %d refused while the queue was full" % (sent, refused))


try:
    asyncio.run(main())
except gattd.GattdError as error:
    raise SystemExit("stream: %s" % error)
