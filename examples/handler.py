#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A thermostat whose values come from this program, not from gattd's store.

- `temperature`: every read gets a fresh reading (int16, 0.01 degC) from --sensor-file (an
  iio/thermal file in millidegrees), else a simulated one;
- `setpoint`: writes are decided here: 10.00 to 30.00 degC is accepted (gattd stores,
  saves and notifies it), anything else gets ATT error 0x80 at the central;
- `report`: a text longer than one ATT packet, new at each read; gattd asks once per long
  read, so a central never sees two reports mixed;
- `samples` (`delivery: "all"`): with --stream-hz, every reading is streamed without loss.

If this program stops, gattd serves the stored value or refuses with 0x80, as handler.json
says; when gattd restarts, the library registers again. Run as root or in group gattd.

    examples/handler.py [--sensor-file /sys/class/thermal/thermal_zone0/temp] [--stream-hz 10]
"""

import argparse
import asyncio
import struct
import time

import gattd

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--sensor-file", help="temperature in millidegrees (e.g. thermal_zone0/temp)")
parser.add_argument("--stream-hz", type=float, default=0, help="stream samples at this rate (0: no stream)")
parser.add_argument("--samples", type=int, default=0, help="stop streaming after this many (0: never)")
args = parser.parse_args()
app = gattd.Peripheral()
started = time.monotonic()
reports = 0


def temperature():
    if args.sensor_file:
        with open(args.sensor_file) as f:
            return int(f.read().strip()) // 10  # millidegrees -> 0.01 degC
    return 2000 + int((time.monotonic() - started) * 10) % 500


@app.on_read("temperature")
def read_temperature(request):
    return struct.pack("<h", temperature())


@app.on_write("setpoint")
def write_setpoint(value, request):
    (setpoint,) = struct.unpack("<h", value)
    if not 1000 <= setpoint <= 3000:
        raise gattd.AttError(0x80, "setpoint %.2f C is outside 10-30 C" % (setpoint / 100))
    print("setpoint %.2f C from %s" % (setpoint / 100, request.address or request.device), flush=True)


@app.on_read("report")
def read_report(request):
    global reports
    reports += 1
    text = "report %d: temperature %.2f C, requested by %s at offset %d; " % (
        reports, temperature() / 100, request.address or request.device or "?", request.offset)
    return (text * 4)[:200]


@app.on_start
def registered():
    print("handler registered", flush=True)


async def stream(app):
    """Samples (sequence number, temperature) to `samples`; a full queue waits, none is lost."""
    if args.stream_hz <= 0:
        return await asyncio.Event().wait()
    for sequence in range(args.samples or 2**32):
        try:
            await app.send("samples", struct.pack("<Ih", sequence, temperature()))
        except gattd.NotRunning:
            await app.wait_started()  # gattd restarts: this sample is skipped, the stream goes on
        await asyncio.sleep(1 / args.stream_hz)
    print("streamed %d samples" % args.samples, flush=True)
    await asyncio.Event().wait()


app.run(stream)
