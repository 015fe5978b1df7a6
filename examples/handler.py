#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A thermostat whose values come from this program, not from gattd's store.

- `temperature`: every read gets a fresh reading (int16, 0.01 degC) from --sensor-file (an
  iio/thermal file in millidegrees), else a simulated one;
- `setpoint`: only its writes are decided here (the module registers it with
  `"operations": ["write"]`, as only a write handler is declared); its reads are served by
  gattd from its store. handler.json's `accept` rule already refuses anything outside
  10.00 to 30.00 degC with ATT error 0x80 ("value refused") before this program is asked;
  this program checks its own input again and refuses with the same 0x80. An accepted value
  is stored, saved and notified by gattd as any write;
- `report`: a text longer than one ATT packet, new at each read; gattd asks once per long
  read, so a central never sees two reports mixed;
- `samples` (`delivery: "all"`): with --stream-hz, every reading is streamed without loss:
  a refused sample (QueueFull) waits for room, one gattd did not take is sent to the next.

If this program is not running, gattd serves the stored value (temperature, report) or
refuses setpoint's writes with 0x81 ("program not running", handler.json's fallback), so a
central can tell that from 0x80. The module waits for gattd at start and registers again
whenever gattd comes back on the bus. Run as a member of group gattd (or root), or with
examples/handler.service.

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
registrations = 0


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
        # handler.json's accept rule refuses these first; a program checks its input anyway.
        raise gattd.AttError(0x80, "setpoint %.2f C is outside 10-30 C" % (setpoint / 100))
    # `address` names the central as bluetoothd does (its identity once bonded); `device`
    # is only bluetoothd's object for it, never to be read for an address.
    print("setpoint %.2f C from %s" % (setpoint / 100, request.address or "?"), flush=True)


@app.on_read("report")
def read_report(request):
    global reports
    reports += 1
    text = "report %d: temperature %.2f C, requested by %s at offset %d; " % (
        reports, temperature() / 100, request.address or "?", request.offset)
    return (text * 4)[:200]


@app.on_start
def registered():
    global registrations
    registrations += 1
    print("handler registered" + (" again" if registrations > 1 else ""), flush=True)


@app.on(gattd.GattdStopped)
def gone(event):
    print("gattd is gone; waiting for it to come back", flush=True)


async def stream(app):
    """Samples (sequence number, temperature) to `samples`; a full queue waits, and a sample
    the stopped gattd did not take goes to the next one: none is lost."""
    if args.stream_hz <= 0:
        return await asyncio.Event().wait()
    for sequence in range(args.samples or 2**32):
        sample = struct.pack("<Ih", sequence, temperature())
        while True:
            try:
                await app.send("samples", sample)
                break
            except (gattd.NotRunning, gattd.NoReply):
                await app.wait_started()  # gattd is not there (yet): the same sample again
        await asyncio.sleep(1 / args.stream_hz)
    print("streamed %d samples" % args.samples, flush=True)
    await asyncio.Event().wait()


app.run(stream)
