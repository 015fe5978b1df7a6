# SPDX-License-Identifier: MIT
"""A handler that misbehaves on request, for test_handlers.py.

    handler_program.py --ids slow,strict [--sleep-read ID=SECONDS] [--answer ID=HEX]
                       [--refuse ID=ATTNAME] [--error-name ID=NAME] [--wrong-type ID]
                       [--fill ID=LENGTH]

--fill answers LENGTH bytes that differ from read to read: "<n>;" repeated, n counting
this program's reads (a long read must come back as one answer, not pieces of two).

Prints `registered` once RegisterHandler succeeded (or `refused NAME: MESSAGE` and exits 3),
and `read ID offset=N` / `write ID HEX reply=B offset=N address=A device=P` as each request
arrives, before it
answers.
"""

import argparse
import sys
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

OBJECT = "/test/handler"


def pairs(items):
    return dict(item.split("=", 1) for item in items)


def fill(n, length):
    """--fill's answer to read n: "<n>;" repeated to length bytes."""
    piece = ("%d;" % n).encode()
    return (piece * (length // len(piece) + 1))[:length]


class Handler(dbus.service.Object):
    def __init__(self, bus, args):
        super().__init__(bus, OBJECT)
        self.sleep = {k: float(v) for k, v in pairs(args.sleep_read).items()}
        self.answer = {k: bytes.fromhex(v) for k, v in pairs(args.answer).items()}
        self.refuse = pairs(args.refuse)
        self.error_name = pairs(args.error_name)
        self.wrong_type = set(args.wrong_type)
        self.fill = {k: int(v) for k, v in pairs(args.fill).items()}
        self.reads = 0

    def _fail(self, characteristic):
        if characteristic in self.refuse:
            raise dbus.DBusException("refused by the test", name="org.gattd.Att." + self.refuse[characteristic])
        if characteristic in self.error_name:
            raise dbus.DBusException("a name gattd does not know", name=self.error_name[characteristic])

    # No fixed out_signature: dbus-python guesses it from the value, so --wrong-type can
    # answer a Read with a string and a Write with a boolean.
    @dbus.service.method("org.gattd.Handler1", in_signature="sa{sv}", out_signature=None)
    def Read(self, characteristic, request):
        print("read %s offset=%d" % (characteristic, request.get("offset", 0)), flush=True)
        if characteristic in self.sleep:
            time.sleep(self.sleep[characteristic])  # blocks this program: a stuck handler
        self._fail(characteristic)
        if characteristic in self.wrong_type:
            return dbus.String("not bytes")
        self.reads += 1
        if characteristic in self.fill:
            return dbus.ByteArray(fill(self.reads, self.fill[characteristic]))
        return dbus.ByteArray(self.answer.get(characteristic, ("fresh %d" % self.reads).encode()))

    @dbus.service.method("org.gattd.Handler1", in_signature="saya{sv}", out_signature=None)
    def Write(self, characteristic, value, request):
        print("write %s %s reply=%s offset=%d address=%s device=%s"
              % (characteristic, bytes(value).hex(), bool(request.get("expects-reply")), request.get("offset", 0),
                 request.get("address", ""), request.get("device", "")),
              flush=True)
        self._fail(characteristic)
        if characteristic in self.wrong_type:
            return dbus.Boolean(True)  # a verdict gattd never asked for
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ids", required=True)
    parser.add_argument("--sleep-read", action="append", default=[])
    parser.add_argument("--answer", action="append", default=[])
    parser.add_argument("--refuse", action="append", default=[])
    parser.add_argument("--error-name", action="append", default=[])
    parser.add_argument("--wrong-type", action="append", default=[])
    parser.add_argument("--fill", action="append", default=[])
    args = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SystemBus()
    handler = Handler(bus, args)
    manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    try:
        manager.RegisterHandler(OBJECT, args.ids.split(","), dbus.Dictionary({}, signature="sv"))
    except dbus.DBusException as e:
        print("refused %s: %s" % (e.get_dbus_name(), e.get_dbus_message()), flush=True)
        return 3
    print("registered", flush=True)
    GLib.MainLoop().run()
    del handler
    return 0


if __name__ == "__main__":
    sys.exit(main())
