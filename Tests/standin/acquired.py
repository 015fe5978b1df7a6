# SPDX-License-Identifier: MIT
"""AcquireNotify / AcquireWrite as bluetoothd does them (gatt-database.c, docs/bluez-contract.md
"Sockets").

A characteristic whose object has the property NotifyAcquired gets AcquireNotify instead
of StartNotify, and one with WriteAcquired gets AcquireWrite on the first write instead of
WriteValue. Two modes:

- "shared" (5.48-5.68, Debian 12's 5.66, the default): one socket per characteristic,
  exactly as 5.66's ccc_write_cb, acquire_notify_reply and sock_hup do it. A subscriber
  is counted when AcquireNotify answers; while no socket is held, every subscriber's CCC
  write calls AcquireNotify (two centrals subscribing at once make two calls, and the
  second answer replaces the first socket, which bluetoothd forgets but keeps reading:
  every datagram on either goes to all subscribers); later subscribers just count. The
  last unsubscribe closes the socket held, or calls StopNotify when none is held (a
  hang-up of any notify socket makes bluetoothd forget the one it holds, and it keeps
  reading that one). One write socket per characteristic. Two knobs replay the 5.66
  order inversion deterministically: a subscriber whose CCC write "raced" the first
  answer calls AcquireNotify although a socket is held (`race`), and reads of a
  characteristic's notify sockets can be paused and then resumed held socket first,
  forgotten ones after (`pause_reads`, `resume_reads`), as 5.66's main loop happened
  to order them.
- "per-device" (5.76 and later, Debian 13's 5.82): one notify socket and one write socket
  per central; a central's unsubscribe closes its own socket. The adapter then has the
  Adapter1 properties 5.82 adds (Manufacturer, Version, Connectable).

What gattd writes to a notify socket is recorded as a notification (like a
PropertiesChanged Value), with the number of centrals it reaches. Writes go out as
datagrams and are acknowledged at once, as bluetoothd does. An AcquireNotify error other
than Failed/NoReply falls back to StartNotify; an AcquireWrite error that maps to 0x0E
falls back to WriteValue.
"""

import os
import socket

import dbus
from gi.repository import GLib

from gatt_manager import APP_CALL_TIMEOUT_S, Notification, now_us

CHRC = "org.bluez.GattCharacteristic1"
READ_SIZE = 512          # sock_io_read's buffer


def acquire_options(device, mtu):
    """append_options for an Acquire call: device, link, mtu (no offset)."""
    return dbus.Dictionary({"device": dbus.ObjectPath(device), "link": dbus.String("LE"),
                            "mtu": dbus.UInt16(mtu)}, signature="sv")


class Socket:
    """bluetoothd's end of one acquired socket."""

    def __init__(self, fd, path, device, mtu, kind):
        self.sock = socket.socket(fileno=fd)
        self.path = path
        self.device = device          # None for the shared (5.66) socket
        self.mtu = mtu
        self.kind = kind              # "notify" or "write"
        self.watch = None
        self.datagrams = 0

    def close(self):
        if self.watch is not None:
            GLib.source_remove(self.watch)
            self.watch = None
        self.sock.close()


class Acquired:
    def __init__(self, daemon):
        self.daemon = daemon
        self.bus = daemon.bus
        self.gatt = daemon.gatt
        self.mode = "shared"
        self.notify = {}          # (path, device or None) -> Socket
        self.write = {}           # (path, device or None) -> Socket
        self.pending_writes = {}  # (path, device or None) -> [(value, done)]
        self.calls = []           # (member, path, options dict) of every Acquire call
        self.errors = {}          # (member, path) -> error name to answer instead (test knob)
        self.socket_types = []    # SO_TYPE of every socket gattd handed over
        self.fell_back = set()    # paths whose AcquireNotify failed: StartNotify/StopNotify instead
        self.pending_notify = set()  # keys whose AcquireNotify has not been answered yet
        self.lost = []            # shared notify sockets bluetoothd forgot but still reads
        self.counts = {}          # path -> subscribers counted (5.66's ntfy_cnt), shared mode
        self.race = set()         # paths whose next subscribe acquires although a socket is held
        self.paused = set()       # paths whose notify sockets are not read for now

    # Adapter1 properties of a release with one socket per central (5.82's set).
    PER_DEVICE_ADAPTER = {"Manufacturer": dbus.UInt16(0x05F1), "Version": dbus.Byte(0x0C),
                          "Connectable": dbus.Boolean(True)}

    def adapter_properties(self):
        return dict(self.PER_DEVICE_ADAPTER) if self.mode == "per-device" else {}

    def set_mode(self, mode):
        import bluez_objects
        self.mode = mode
        for adapter in self.daemon.adapters.values():
            if mode == "per-device":
                adapter.update(bluez_objects.ADAPTER, **self.PER_DEVICE_ADAPTER)
            else:
                for name in self.PER_DEVICE_ADAPTER:
                    adapter.props[bluez_objects.ADAPTER].pop(name, None)

    # -- bookkeeping -------------------------------------------------------------

    @staticmethod
    def wants_notify(attr):
        return attr.kind == "characteristic" and "NotifyAcquired" in attr.props

    @staticmethod
    def wants_write(attr):
        return attr.kind == "characteristic" and "WriteAcquired" in attr.props

    def _key(self, path, device):
        return (str(path), str(device) if self.mode == "per-device" else None)

    def sockets(self, path=None):
        return [s for s in list(self.notify.values()) + self.lost + list(self.write.values())
                if path is None or s.path == str(path)]

    def _take(self, reply, member, path):
        fd, mtu = reply
        fd = fd.take()
        kind = socket.socket(fileno=os.dup(fd)).getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
        self.socket_types.append(kind)
        if kind != socket.SOCK_SEQPACKET:
            self.daemon.warn("%s on %s returned a socket of type %d, not SOCK_SEQPACKET: "
                             "datagram boundaries are lost" % (member, path, kind))
        return fd, int(mtu)

    def _call(self, app, attr, member, device, mtu, on_reply, on_error):
        opts = acquire_options(device, mtu)
        self.calls.append((member, attr.path, opts))
        self.daemon.log("%s %s device=%s mtu=%d" % (member, attr.path, device, mtu))
        forced = self.errors.get((member, attr.path))
        if forced:
            GLib.idle_add(lambda: on_error(dbus.exceptions.DBusException("forced", name=forced)) and False)
            return
        self.bus.call_async(app.owner, attr.path, CHRC, member, "a{sv}", (opts,), on_reply, on_error,
                            timeout=APP_CALL_TIMEOUT_S)

    # -- notifications -------------------------------------------------------------

    def subscribe(self, app, attr, device, mtu, first, fallback):
        """A central's CCC enable. Returns True when it was handled here."""
        key = self._key(attr.path, device)
        if attr.path in self.fell_back:
            if first:
                fallback()
            return True
        raced = attr.path in self.race
        self.race.discard(attr.path)
        if key in self.notify and not raced:
            if self.mode == "shared":   # shared socket: later subscribers only count
                self.counts[key[0]] = self.counts.get(key[0], 0) + 1
            return True

        def on_reply(*reply):
            self.pending_notify.discard(key)
            fd, got_mtu = self._take(reply, "AcquireNotify", attr.path)
            sock = Socket(fd, attr.path, key[1], got_mtu, "notify")
            if attr.path not in self.paused:
                self._watch_notify(sock)
            if self.mode == "shared":
                old = self.notify.get(key)
                if old is not None:     # 5.66: chrc->notify_io is overwritten, the old io kept
                    self.daemon.log("AcquireNotify %s answered again: the previous socket is forgotten"
                                    % attr.path)
                    self.lost.append(old)
                self.counts[key[0]] = self.counts.get(key[0], 0) + 1
            self.notify[key] = sock
            for listener in list(self.gatt.listeners):
                listener("acquired", attr.path)

        def on_error(exc):
            self.pending_notify.discard(key)
            name = exc.get_dbus_name()
            self.daemon.log("AcquireNotify %s failed: %s" % (attr.path, name))
            if name not in ("org.freedesktop.DBus.Error.NoReply", "org.bluez.Error.Failed"):
                self.fell_back.add(attr.path)
                fallback()

        self.pending_notify.add(key)
        self._call(app, attr, "AcquireNotify", device, mtu, on_reply, on_error)
        return True

    def unsubscribe(self, attr, device, last):
        key = self._key(attr.path, device)
        if self.mode == "shared":
            count = self.counts.get(key[0], 0)
            if count == 0:
                if key in self.pending_notify:
                    self.daemon.log("%s unsubscribed before AcquireNotify on %s answered: "
                                    "its socket will stay open" % (device, attr.path))
                return
            self.counts[key[0]] = count - 1
            if count > 1:
                return
            if key not in self.notify:  # 5.66: no socket held, so StopNotify
                app, _ = self.gatt.find(attr.path)
                if app is not None:
                    self.daemon.send_no_reply(app.owner, attr.path, CHRC, "StopNotify")
                    self.daemon.log("StopNotify %s: no notify socket held" % attr.path)
                return
        sock = self.notify.pop(key, None)
        if sock is None and key in self.pending_notify:
            # bluetoothd counts a subscriber only when AcquireNotify answers, so the socket
            # that answer brings stays open with nobody subscribed (5.66's ccc_write_cb).
            self.daemon.log("%s unsubscribed before AcquireNotify on %s answered: "
                            "its socket will stay open" % (device, attr.path))
        if sock is not None:
            self.daemon.log("notify socket of %s closed (%s)" % (attr.path, "last subscriber left"
                            if self.mode == "shared" else "%s unsubscribed" % device))
            sock.close()

    def _watch_notify(self, sock):
        sock.watch = GLib.io_add_watch(sock.sock.fileno(), GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR,
                                       self._readable, sock)

    def pause_reads(self, path):
        """Stops reading the notify sockets of `path`: what gattd writes stays queued."""
        self.paused.add(str(path))
        for sock in self.sockets(path):
            if sock.kind == "notify" and sock.watch is not None:
                GLib.source_remove(sock.watch)
                sock.watch = None

    def resume_reads(self, path):
        """Reads what the notify sockets of `path` queued meanwhile, the held socket
        first and the forgotten ones after, then watches them again."""
        self.paused.discard(str(path))
        held = [s for s in self.notify.values() if s.path == str(path)]
        for sock in held + [s for s in self.lost if s.path == str(path)]:
            open_ = True
            while open_:
                queued = self._queued(sock)
                if queued is None:          # nothing queued, gattd's end still open
                    break
                open_ = self._readable(sock.sock.fileno(), GLib.IO_IN if queued else GLib.IO_HUP, sock)
            if open_ and sock.watch is None:
                self._watch_notify(sock)

    @staticmethod
    def _queued(sock):
        try:
            return bool(sock.sock.recv(READ_SIZE, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            return None
        except OSError:
            return False

    def _readable(self, fd, condition, sock):
        if condition & GLib.IO_IN:
            try:
                data = sock.sock.recv(READ_SIZE)
            except OSError:
                data = b""
            if data:
                sock.datagrams += 1
                self._notified(sock, data)
                return True
        # gattd closed its end: sock_hup
        self.daemon.log("%s socket of %s hung up by the app" % (sock.kind, sock.path))
        table = self.notify if sock.kind == "notify" else self.write
        if sock in self.lost:
            self.lost.remove(sock)
        if sock.kind == "notify" and self.mode == "shared":
            # 5.66's sock_hup: whichever notify io hung up, the one held is forgotten (and
            # still read).
            held = self.notify.pop((sock.path, None), None)
            if held is not None and held is not sock:
                self.lost.append(held)
        for key, value in list(table.items()):
            if value is sock:
                del table[key]
        sock.watch = None
        sock.sock.close()
        for listener in list(self.gatt.listeners):
            listener("hangup", sock.path)
        return False

    def _notified(self, sock, data):
        subs = self.gatt.subscribers.get(sock.path, set())
        reach = 1 if sock.device is not None else len(subs)
        self.gatt.notifications.setdefault(sock.path, []).append(
            Notification(bytes(data), now_us(), reach, via="socket"))
        for listener in list(self.gatt.listeners):
            listener("notification", sock.path)

    def confirm(self, path, device):
        """5.80+: a central confirmed an indication; bluetoothd writes 0x01 to its socket."""
        sock = self.notify.get(self._key(path, device))
        if sock is None:
            return False
        sock.sock.send(b"\x01")
        return True

    # -- writes ----------------------------------------------------------------------

    def write_value(self, app, attr, value, device, mtu, done, fallback):
        key = self._key(attr.path, device)
        sock = self.write.get(key)
        if sock is not None:
            self._send(sock, value, done)
            return
        queue = self.pending_writes.setdefault(key, [])
        queue.append((bytes(value), done))
        if len(queue) > 1:
            return                     # AcquireWrite under way

        def on_reply(*reply):
            fd, got_mtu = self._take(reply, "AcquireWrite", attr.path)
            sock = Socket(fd, attr.path, key[1], got_mtu, "write")
            sock.watch = GLib.io_add_watch(fd, GLib.IO_HUP | GLib.IO_ERR, self._readable, sock)
            self.write[key] = sock
            for value, finish in self.pending_writes.pop(key, []):
                self._send(sock, value, finish)

        def on_error(exc):
            name = exc.get_dbus_name()
            self.daemon.log("AcquireWrite %s failed: %s" % (attr.path, name))
            for value, finish in self.pending_writes.pop(key, []):
                fallback(value, finish)

        self._call(app, attr, "AcquireWrite", device, mtu, on_reply, on_error)

    def _send(self, sock, value, done):
        try:
            sock.sock.send(bytes(value))
        except OSError as exc:
            self.daemon.log("write to the socket of %s failed: %s" % (sock.path, exc))
            done(0x0E)
            return
        sock.datagrams += 1
        done(0)

    def close_write(self, path, device):
        sock = self.write.pop(self._key(path, device), None)
        if sock is not None:
            sock.close()
            return True
        return False

    def drop_app(self, paths):
        """The app is gone (unregistered, owner left, adapter removed): its sockets close."""
        for table in (self.notify, self.write):
            for key in [k for k in table if k[0] in paths]:
                table.pop(key).close()
        for sock in [s for s in self.lost if s.path in paths]:
            self.lost.remove(sock)
            sock.close()
        for path in paths:
            self.counts.pop(path, None)
