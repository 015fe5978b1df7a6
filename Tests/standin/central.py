# SPDX-License-Identifier: MIT
"""What bluetoothd does towards the app when a central uses an attribute (docs/bluez-contract.md §2-§6).

Calls are asynchronous (the stand-in's loop keeps serving); each operation ends
in `done(result)` or `fail(DBusException)`. Option dictionaries are built as
bluetoothd's append_options does: device, offset (only when non-zero), link,
prepare-authorize (only when true), mtu.
"""

import dbus

import bluez_rules as rules
from gatt_manager import APP_CALL_TIMEOUT_S

CHRC = "org.bluez.GattCharacteristic1"
DESC = "org.bluez.GattDescriptor1"


def options(device, offset, mtu, prepare_authorize=False):
    opts = dbus.Dictionary({}, signature="sv")
    opts["device"] = dbus.ObjectPath(device)
    if offset:
        opts["offset"] = dbus.UInt16(offset)
    opts["link"] = dbus.String("LE")
    if prepare_authorize:
        opts["prepare-authorize"] = dbus.Boolean(True)
    opts["mtu"] = dbus.UInt16(mtu)
    return opts


def control_error(message):
    return dbus.exceptions.DBusException(message, name="org.gattd.test.Error.Failed")


class Central:
    """ATT-level operations on registered attributes, plus raw D-Bus forwarding."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.bus = daemon.bus
        self.gatt = daemon.gatt
        self.security = rules.SECURITY_LOW
        self.acquired = daemon.acquired
        self.mtu = 23                 # the link's ATT MTU for Acquire calls (test knob)

    def _lookup(self, path):
        app, attr = self.gatt.find(str(path))
        if app is None or attr.kind == "service":
            raise control_error("no registered characteristic or descriptor at %s" % path)
        return app, attr

    @staticmethod
    def _iface(attr):
        return CHRC if attr.kind == "characteristic" else DESC

    # -- D-Bus level: forward gattd's reply or error unchanged ----------------------

    def read(self, path, offset, mtu, device, done, fail):
        app, attr = self._lookup(path)
        self.daemon.log("ReadValue %s offset=%d mtu=%d" % (path, offset, mtu))
        self.bus.call_async(app.owner, attr.path, self._iface(attr), "ReadValue", "a{sv}",
                            (options(device, offset, mtu),), done, fail,
                            timeout=APP_CALL_TIMEOUT_S, byte_arrays=True)

    def write(self, path, value, offset, mtu, device, prepare_authorize, done, fail):
        """WriteValue; for a write-without-response characteristic it is sent
        NO_REPLY and done() runs at once (bluetoothd acknowledges immediately)."""
        app, attr = self._lookup(path)
        if self.acquired.wants_write(attr) and not prepare_authorize:
            # chrc_write_cb: the socket if there is one, else AcquireWrite first; the write
            # is acknowledged once it is on the socket, whatever the app makes of it.
            def finish(code):
                if code:
                    fail(dbus.exceptions.DBusException("socket write failed", name="org.bluez.Error.Failed"))
                else:
                    done()
            self.acquired.write_value(
                app, attr, value, device, mtu, finish,
                lambda v, f: self._write_call(app, attr, v, offset, mtu, device, False, lambda: f(0),
                                              lambda e: f(0x0E)))
            return
        self._write_call(app, attr, value, offset, mtu, device, prepare_authorize, done, fail)

    def _write_call(self, app, attr, value, offset, mtu, device, prepare_authorize, done, fail):
        path = attr.path
        args = (dbus.ByteArray(bytes(value)), options(device, offset, mtu, prepare_authorize))
        self.daemon.log("WriteValue %s offset=%d len=%d" % (path, offset, len(value)))
        if attr.kind == "characteristic" and attr.chrc_flags.write_without_response:
            self.daemon.send_no_reply(app.owner, attr.path, CHRC, "WriteValue", "aya{sv}", args)
            done()
            return
        self.bus.call_async(app.owner, attr.path, self._iface(attr), "WriteValue", "aya{sv}",
                            args, lambda *r: done(), fail, timeout=APP_CALL_TIMEOUT_S)

    # -- ATT level: permission check first, errors mapped to ATT codes --------------

    def read_att(self, path, offset, mtu, device, done):
        """done((att_code, payload)) for one Read / Read Blob request."""
        _, attr = self._lookup(path)
        code = rules.check_permissions(attr.perm, rules.PERM_READ_MASK, self.security)
        if code:
            self.daemon.log("ATT read %s refused by bluetoothd itself: 0x%02x" % (path, code))
            done((code, b""))
            return

        def ok(value):
            if not isinstance(value, dbus.ByteArray):
                done((rules.ATT_REQUEST_NOT_SUPPORTED, b""))   # reply of wrong type
                return
            done((0, rules.read_pdu_payload(value, mtu)))

        def err(exc):
            done((rules.att_error_for("read", exc.get_dbus_name(), exc.get_dbus_message()), b""))

        self.read(path, offset, mtu, device, ok, err)

    def long_read(self, path, mtu, device, done):
        """Read then Read Blob with increasing offset until a response shorter than mtu-1."""
        collected = bytearray()
        chunk = max(mtu - 1, 1)

        def step(result):
            code, payload = result
            if code:
                done((code, bytes(collected)))
                return
            collected.extend(payload)
            if len(payload) < chunk:
                done((0, bytes(collected)))
            else:
                self.read_att(path, len(collected), mtu, device, step)

        self.read_att(path, 0, mtu, device, step)

    def write_att(self, path, value, offset, mtu, device, prepare_authorize, done):
        """done(att_code) for one Write Request (or Execute Write segment)."""
        _, attr = self._lookup(path)
        code = rules.check_permissions(attr.perm, rules.PERM_WRITE_MASK, self.security)
        if code:
            self.daemon.log("ATT write %s refused by bluetoothd itself: 0x%02x" % (path, code))
            done(code)
            return
        self.write(path, value, offset, mtu, device, prepare_authorize, lambda: done(0),
                   lambda exc: done(rules.att_error_for("write", exc.get_dbus_name(),
                                                        exc.get_dbus_message())))

    # -- subscriptions (NO_REPLY, reference counted like ccc_write_cb) --------------

    def notify_call(self, path, member):
        app, attr = self._lookup(path)
        self.daemon.send_no_reply(app.owner, attr.path, CHRC, member)
        self.daemon.log("%s %s (no reply expected)" % (member, path))

    def subscribe(self, path, device):
        """CCC enable from `device`: 0xFD if the characteristic cannot notify/indicate;
        StartNotify only for the first subscriber."""
        _, attr = self._lookup(path)
        if attr.kind != "characteristic" or not attr.chrc_flags.has_ccc:
            return rules.ATT_CCC_IMPROPERLY_CONFIGURED
        subs = self.gatt.subscribers.setdefault(attr.path, set())
        if device in subs:
            return 0
        subs.add(device)
        if self.acquired.wants_notify(attr):
            app, _ = self._lookup(path)
            self.acquired.subscribe(app, attr, device, self.mtu, len(subs) == 1,
                                    lambda: self.notify_call(path, "StartNotify"))
        elif len(subs) == 1:
            self.notify_call(path, "StartNotify")
        return 0

    def unsubscribe(self, path, device):
        _, attr = self._lookup(path)
        subs = self.gatt.subscribers.setdefault(attr.path, set())
        if device not in subs:
            return 0
        subs.discard(device)
        if self.acquired.wants_notify(attr) and attr.path not in self.acquired.fell_back:
            self.acquired.unsubscribe(attr, device, not subs)
        elif not subs:
            self.notify_call(path, "StopNotify")
        return 0

    # -- raw call, for malformed-call tests ---------------------------------------

    def raw_call(self, path, interface, member, signature, args, done):
        """Send any call to the app owner of `path`; done((error_name, message, reply_args))."""
        app, _ = self.gatt.find(str(path))
        if app is None:
            raise control_error("no registered attribute at %s" % path)
        msg = dbus.lowlevel.MethodCallMessage(app.owner, path, interface, member)
        if signature:
            msg.append(signature=signature, *args)

        def on_reply(reply):
            if reply.get_type() == dbus.lowlevel.MESSAGE_TYPE_ERROR:
                body = reply.get_args_list()
                done((reply.get_error_name(), str(body[0]) if body else "", []))
            else:
                done(("", "", reply.get_args_list()))

        self.bus.send_message_with_reply(msg, on_reply, APP_CALL_TIMEOUT_S, require_main_loop=True)
