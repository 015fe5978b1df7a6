#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A handler program on the gattd Python module (python/gattd), for scenarios/gattd-programs.sh:
answers reads of `reading` with "from the handler", refuses writes to `gate` with ATT
error 0x81. Prints "registered" each time its handlers are registered (at start and again
after gattd restarts), and "write gate HEX from ADDRESS" for each write it decides."""
import gattd

app = gattd.Peripheral()


@app.on_read("reading")
def reading(request):
    return b"from the handler"


@app.on_write("gate")
def gate(value, request):
    print("write gate %s from %s" % (value.hex(), request.address), flush=True)
    raise gattd.AttError(0x81, "the gate stays shut")


app.on_start(lambda: print("registered", flush=True))
app.run()
