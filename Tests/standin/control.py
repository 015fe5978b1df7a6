# SPDX-License-Identifier: MIT
"""org.gattd.test.Standin1 on /org/gattd/test: the test suite's handle on the stand-in.

Tests call these methods synchronously from their own connection. Methods that
talk to the app reply late (async_callbacks), so the stand-in's loop keeps
running. Waits end on the registration/notification event or a GLib timeout,
never by polling.
"""

import dbus
import dbus.lowlevel
import dbus.service
from gi.repository import GLib

from central import control_error

IFACE = "org.gattd.test.Standin1"
PATH = "/org/gattd/test"
ASYNC = dict(async_callbacks=("reply", "error"))


def _waiter(daemon, listeners, timeout_ms, ready, reply, error, what):
    """Reply with ready() as soon as it returns non-None; fail after timeout_ms."""
    value = ready()
    if value is not None:
        reply(value)
        return
    state = {}

    def finish():
        listeners.remove(on_event)
        GLib.source_remove(state["timer"])

    def on_event(*_):
        result = ready()
        if result is not None:
            finish()
            reply(result)

    def on_timeout():
        listeners.remove(on_event)
        daemon.log("timed out after %d ms waiting for %s" % (timeout_ms, what))
        error(dbus.exceptions.DBusException("timed out after %d ms waiting for %s" % (timeout_ms, what),
                                            name="org.gattd.test.Error.Timeout"))
        return False

    listeners.append(on_event)
    state["timer"] = GLib.timeout_add(timeout_ms, on_timeout)


class ControlObject(dbus.service.Object):
    def __init__(self, conn, daemon):
        super().__init__(conn, PATH)
        self.d = daemon

    # -- applications and the attribute tree ---------------------------------

    def _apps(self):
        return dbus.Array([dbus.Struct((app.owner, dbus.ObjectPath(app.path)), signature="so")
                           for app in self.d.gatt.apps.values()], signature="(so)")

    @dbus.service.method(IFACE, out_signature="a(so)")
    def Applications(self):
        return self._apps()

    @dbus.service.method(IFACE, in_signature="u", out_signature="(so)", **ASYNC)
    def WaitForApplication(self, timeout_ms, reply, error):
        # An application registered and none still being read: a client registering one
        # application per service sends every RegisterApplication at once, so they are all
        # pending before the first finishes.
        def ready():
            apps = self._apps()
            return apps[0] if apps and not self.d.gatt.pending else None
        _waiter(self.d, self.d.gatt.listeners, timeout_ms, ready, reply, error, "an application")

    @dbus.service.method(IFACE, in_signature="uu", out_signature="a(so)", **ASYNC)
    def WaitForApplications(self, count, timeout_ms, reply, error):
        """Returns once exactly `count` applications are registered (0 = all gone)."""
        def ready():
            apps = self._apps()
            return apps if len(apps) == count else None
        _waiter(self.d, self.d.gatt.listeners, timeout_ms, ready, reply, error,
                "%d applications" % count)

    @dbus.service.method(IFACE, in_signature="u", out_signature="")
    def SetRegistrationReplyDelay(self, delay_ms):
        """Hold each RegisterApplication reply delay_ms after reading the tree (0 = off)."""
        self.d.gatt.reply_delay_ms = int(delay_ms)

    @dbus.service.method(IFACE, in_signature="u", out_signature="", **ASYNC)
    def WaitForHeldRegistration(self, timeout_ms, reply, error):
        """Returns once a registration has read the tree and its reply is being held."""
        _waiter(self.d, self.d.gatt.listeners, timeout_ms,
                lambda: True if self.d.gatt.delayed else None, lambda _: reply(), error,
                "a held registration")

    @dbus.service.method(IFACE, in_signature="u", out_signature="a(so)", **ASYNC)
    def WaitForRegistrationsDone(self, timeout_ms, reply, error):
        """Returns the applications once no registration is pending or held."""
        def ready():
            gatt = self.d.gatt
            return None if gatt.pending or gatt.delayed else self._apps()
        _waiter(self.d, self.d.gatt.listeners, timeout_ms, ready, reply, error, "registrations to finish")

    @dbus.service.method(IFACE, out_signature="aa{sv}")
    def Attributes(self):
        return dbus.Array([a.as_dict() for app in self.d.gatt.apps.values() for a in app.attributes()],
                          signature="a{sv}")

    @dbus.service.method(IFACE, out_signature="as")
    def Warnings(self):
        return dbus.Array(self.d.warnings, signature="s")

    @dbus.service.method(IFACE, out_signature="as")
    def Log(self):
        return dbus.Array(self.d.log_lines, signature="s")

    # -- central operations ------------------------------------------------------

    @dbus.service.method(IFACE, in_signature="oqqo", out_signature="ay", **ASYNC)
    def Read(self, path, offset, mtu, device, reply, error):
        self.d.central.read(path, offset, mtu, device, lambda v: reply(dbus.ByteArray(bytes(v))), error)

    @dbus.service.method(IFACE, in_signature="oqqo", out_signature="yay", **ASYNC)
    def ReadAtt(self, path, offset, mtu, device, reply, error):
        self.d.central.read_att(path, offset, mtu, device, lambda r: reply(r[0], dbus.ByteArray(r[1])))

    @dbus.service.method(IFACE, in_signature="oqo", out_signature="yay", **ASYNC)
    def LongRead(self, path, mtu, device, reply, error):
        self.d.central.long_read(path, mtu, device, lambda r: reply(r[0], dbus.ByteArray(r[1])))

    @dbus.service.method(IFACE, in_signature="oayqqob", out_signature="", **ASYNC)
    def Write(self, path, value, offset, mtu, device, prepare_authorize, reply, error):
        self.d.central.write(path, bytes(value), offset, mtu, device, prepare_authorize, reply, error)

    @dbus.service.method(IFACE, in_signature="oayqqob", out_signature="y", **ASYNC)
    def WriteAtt(self, path, value, offset, mtu, device, prepare_authorize, reply, error):
        self.d.central.write_att(path, bytes(value), offset, mtu, device, prepare_authorize, reply)

    @dbus.service.method(IFACE, in_signature="sss", out_signature="y")
    def AttError(self, op, name, message):
        import bluez_rules
        if op not in ("read", "write"):
            raise control_error("op must be 'read' or 'write'")
        return bluez_rules.att_error_for(op, name, message)

    @dbus.service.method(IFACE, in_signature="y", out_signature="")
    def SetSecurity(self, level):
        self.d.central.security = int(level)

    @dbus.service.method(IFACE, in_signature="osssav", out_signature="ssav", **ASYNC)
    def RawCall(self, path, interface, member, signature, args, reply, error):
        self.d.central.raw_call(path, interface, member, signature, list(args),
                                lambda r: reply(r[0], r[1], dbus.Array(r[2], signature="v")))

    # -- notifications -----------------------------------------------------------

    @dbus.service.method(IFACE, in_signature="o", out_signature="")
    def StartNotify(self, path):
        self.d.central.notify_call(path, "StartNotify")

    @dbus.service.method(IFACE, in_signature="o", out_signature="")
    def StopNotify(self, path):
        self.d.central.notify_call(path, "StopNotify")

    @dbus.service.method(IFACE, in_signature="o", out_signature="")
    def Confirm(self, path):
        self.d.central.notify_call(path, "Confirm")

    @dbus.service.method(IFACE, in_signature="oo", out_signature="y")
    def Subscribe(self, path, device):
        return self.d.central.subscribe(path, device)

    @dbus.service.method(IFACE, in_signature="oao", out_signature="ay")
    def SubscribeAtOnce(self, path, devices):
        """CCC enables from several centrals handled in one go, before any AcquireNotify is
        answered (centrals subscribing at the same moment)."""
        return dbus.ByteArray(bytes(self.d.central.subscribe(path, device) for device in devices))

    @dbus.service.method(IFACE, in_signature="oo", out_signature="y")
    def SubscribeRacing(self, path, device):
        """A CCC enable handled before the answer to an earlier AcquireNotify came: in
        shared mode it calls AcquireNotify again although a socket is held (5.66)."""
        self.d.acquired.race.add(str(path))
        return self.d.central.subscribe(path, device)

    @dbus.service.method(IFACE, in_signature="ob", out_signature="")
    def PauseNotifyReads(self, path, paused):
        """Stops (True) reading the notify sockets of `path`, or (False) reads what they
        queued, the held socket first and forgotten ones after, and goes on reading."""
        if paused:
            self.d.acquired.pause_reads(str(path))
        else:
            self.d.acquired.resume_reads(str(path))

    @dbus.service.method(IFACE, in_signature="oo", out_signature="y")
    def Unsubscribe(self, path, device):
        return self.d.central.unsubscribe(path, device)

    # -- AcquireNotify / AcquireWrite (acquired.py) -------------------------------------

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def SetAcquireMode(self, mode):
        """"shared" (bluetoothd 5.66: one socket per characteristic) or "per-device" (5.76+)."""
        if mode not in ("shared", "per-device"):
            raise control_error("unknown acquire mode %s" % mode)
        self.d.acquired.set_mode(str(mode))

    @dbus.service.method(IFACE, in_signature="q", out_signature="")
    def SetLinkMTU(self, mtu):
        self.d.central.mtu = int(mtu)

    @dbus.service.method(IFACE, in_signature="sos", out_signature="")
    def SetAcquireError(self, member, path, name):
        """The next Acquire* calls for `path` fail with `name` without reaching the app."""
        self.d.acquired.errors[(str(member), str(path))] = str(name)

    @dbus.service.method(IFACE, out_signature="a(soa{sv})")
    def AcquireCalls(self):
        return dbus.Array([dbus.Struct((m, dbus.ObjectPath(p), o)) for m, p, o in self.d.acquired.calls],
                          signature="(soa{sv})")

    @dbus.service.method(IFACE, out_signature="ai")
    def SocketTypes(self):
        return dbus.Array(self.d.acquired.socket_types, signature="i")

    def _sockets(self, path, kind):
        return [s for s in self.d.acquired.sockets(path) if s.kind == kind]

    @dbus.service.method(IFACE, in_signature="os", out_signature="a(squ)")
    def Sockets(self, path, kind):
        """(device or "", mtu, datagrams) of each open `kind` socket of `path`."""
        return dbus.Array([dbus.Struct((s.device or "", dbus.UInt16(s.mtu), dbus.UInt32(s.datagrams)))
                           for s in self._sockets(path, kind)], signature="(squ)")

    @dbus.service.method(IFACE, in_signature="osuu", out_signature="u", **ASYNC)
    def WaitForSockets(self, path, kind, count, timeout_ms, reply, error):
        """Waits until `path` has exactly `count` open `kind` sockets."""
        def ready():
            n = len(self._sockets(path, kind))
            return dbus.UInt32(n) if n == count else None
        _waiter(self.d, self.d.gatt.listeners, timeout_ms, ready, reply, error,
                "%d %s sockets on %s" % (count, kind, path))

    @dbus.service.method(IFACE, in_signature="oo", out_signature="b")
    def ConfirmOnSocket(self, path, device):
        return self.d.acquired.confirm(str(path), str(device))

    @dbus.service.method(IFACE, in_signature="oo", out_signature="b")
    def CloseWriteSocket(self, path, device):
        """The central disconnects: bluetoothd closes its write socket."""
        return self.d.acquired.close_write(str(path), str(device))

    @dbus.service.method(IFACE, in_signature="o", out_signature="as")
    def NotificationPaths(self, path):
        """How each notification of `path` arrived: "signal" or "socket"."""
        return dbus.Array([n.via for n in self.d.gatt.notifications.get(str(path), [])], signature="s")

    def _values(self, path):
        return dbus.Array([dbus.ByteArray(n.value) for n in self.d.gatt.notifications.get(str(path), [])],
                          signature="ay")

    @dbus.service.method(IFACE, in_signature="o", out_signature="aay")
    def Notifications(self, path):
        return self._values(path)

    @dbus.service.method(IFACE, in_signature="o", out_signature="at")
    def NotificationTimes(self, path):
        return dbus.Array([dbus.UInt64(n.t_us) for n in self.d.gatt.notifications.get(str(path), [])],
                          signature="t")

    @dbus.service.method(IFACE, in_signature="ouu", out_signature="aay", **ASYNC)
    def WaitForNotifications(self, path, count, timeout_ms, reply, error):
        def ready():
            values = self._values(path)
            return values if len(values) >= count else None
        _waiter(self.d, self.d.gatt.listeners, timeout_ms, ready, reply, error,
                "%d notifications on %s" % (count, path))

    # -- adverts and adapters ----------------------------------------------------

    @dbus.service.method(IFACE, out_signature="aa{sv}")
    def Adverts(self):
        return dbus.Array([a.as_dict() for a in self.d.adverts.adverts.values()], signature="a{sv}")

    @dbus.service.method(IFACE, in_signature="o", out_signature="aa{sv}")
    def AdvertUpdates(self, path):
        for a in self.d.adverts.adverts.values():
            if a.path == str(path):
                return dbus.Array([dbus.Dictionary(u, signature="sv") for u in a.updates], signature="a{sv}")
        raise control_error("no advertisement at %s" % path)

    @dbus.service.method(IFACE, in_signature="ouu", out_signature="aa{sv}", **ASYNC)
    def WaitForAdvertUpdates(self, path, count, timeout_ms, reply, error):
        """Waits until the advertisement at `path` has had `count` PropertiesChanged updates."""
        def ready():
            for a in self.d.adverts.adverts.values():
                if a.path == str(path) and len(a.updates) >= count:
                    return dbus.Array([dbus.Dictionary(u, signature="sv") for u in a.updates], signature="a{sv}")
            return None
        _waiter(self.d, self.d.adverts.listeners, timeout_ms, ready, reply, error,
                "%d updates of %s" % (count, path))

    @dbus.service.method(IFACE, in_signature="u", out_signature="a{sv}", **ASYNC)
    def WaitForAdvert(self, timeout_ms, reply, error):
        def ready():
            adverts = list(self.d.adverts.adverts.values())
            return adverts[0].as_dict() if adverts else None
        _waiter(self.d, self.d.adverts.listeners, timeout_ms, ready, reply, error, "an advertisement")

    @dbus.service.method(IFACE, in_signature="o", out_signature="")
    def ReleaseAdvert(self, path):
        self.d.adverts.release(str(path))

    @dbus.service.method(IFACE, in_signature="s", out_signature="u")
    def ForgetAdvertisingInstances(self, adapter):
        """The instances vanish without Release (what a kernel that does not restore
        advertising after power-on looks like from D-Bus: ActiveInstances drops)."""
        keys = [k for k in self.d.adverts.adverts if k[0] == str(adapter)]
        for key in keys:
            self.d.adverts._remove(key, release=False, why="instances lost by the controller")
        return dbus.UInt32(len(keys))

    @dbus.service.method(IFACE, in_signature="b", out_signature="")
    def SetPowered(self, powered):
        for adapter in self.d.adapters.values():
            adapter._set_bool("Powered", dbus.Boolean(powered))

    @dbus.service.method(IFACE, in_signature="ssb", out_signature="o")
    def SetDeviceConnected(self, adapter, address, connected):
        """A central connects or disconnects: Device1.Connected changes (PropertiesChanged)."""
        import bluez_objects
        if str(adapter) not in self.d.adapters:
            raise control_error("no adapter %s" % adapter)
        device = self.d.device(str(adapter), str(address))
        device.update(bluez_objects.DEVICE1, Connected=dbus.Boolean(bool(connected)))
        self.d.log("device %s Connected=%s" % (device.path, bool(connected)))
        return dbus.ObjectPath(device.path)

    @dbus.service.method(IFACE, in_signature="ssb", out_signature="o")
    def SetDeviceBonded(self, adapter, address, bonded):
        """A central finished pairing and bonding (or lost its bond): Paired and Bonded change."""
        import bluez_objects
        if str(adapter) not in self.d.adapters:
            raise control_error("no adapter %s" % adapter)
        device = self.d.device(str(adapter), str(address))
        device.update(bluez_objects.DEVICE1, Paired=dbus.Boolean(bool(bonded)), Bonded=dbus.Boolean(bool(bonded)))
        return dbus.ObjectPath(device.path)

    @dbus.service.method(IFACE, in_signature="ssssbb", out_signature="o")
    def AddDevice(self, adapter, path_address, address, address_type, connected, bonded):
        """A Device1 at dev_<path_address> with Address `address` and AddressType
        `address_type` (a phone first seen at a private address: that address, "random"),
        even when another object has that Address already (bluetoothd after a re-pair with
        a new IRK, or after a restart: dev_<identity>)."""
        import bluez_objects
        device = self.d.add_device(str(adapter), str(address), str(address_type), str(path_address))
        device.update(bluez_objects.DEVICE1, Paired=dbus.Boolean(bool(bonded)), Bonded=dbus.Boolean(bool(bonded)))
        device.update(bluez_objects.DEVICE1, Connected=dbus.Boolean(bool(connected)))
        self.d.log("device %s added Address=%s" % (device.path, address))
        return dbus.ObjectPath(device.path)

    @dbus.service.method(IFACE, in_signature="ossb", out_signature="")
    def SetDeviceIdentity(self, path, address, address_type, bond):
        """bluetoothd learned the identity of the central at `path` (it bonded over a private
        address: new_irk_callback/device_update_addr): Address and AddressType change in one
        PropertiesChanged, the path stays; with `bond`, Paired and Bonded follow."""
        import bluez_objects
        device = self.d.devices.get(str(path))
        if device is None:
            raise control_error("no device %s" % path)
        device.update(bluez_objects.DEVICE1, Address=dbus.String(str(address)),
                      AddressType=dbus.String(str(address_type)))
        if bond:
            device.update(bluez_objects.DEVICE1, Paired=dbus.Boolean(True), Bonded=dbus.Boolean(True))
        self.d.log("device %s Address=%s" % (device.path, address))

    @dbus.service.method(IFACE, in_signature="ob", out_signature="")
    def SetPathConnected(self, path, connected):
        """The central at object `path` connects or disconnects (a bonded phone returning
        from a new private address lands on the object of its bond)."""
        import bluez_objects
        device = self.d.devices.get(str(path))
        if device is None:
            raise control_error("no device %s" % path)
        device.update(bluez_objects.DEVICE1, Connected=dbus.Boolean(bool(connected)))
        self.d.log("device %s Connected=%s" % (device.path, bool(connected)))

    @dbus.service.method(IFACE, in_signature="", out_signature="a(sssb)")
    def Agents(self):
        """(owner, path, capability, is default) of every registered agent."""
        b = self.d.bluez
        return dbus.Array([dbus.Struct((o, p, c, o == b.default_agent)) for o, (p, c) in sorted(b.agents.items())],
                          signature="(sssb)")

    @dbus.service.method(IFACE, in_signature="ssav", out_signature="av", async_callbacks=("reply", "error"))
    def AgentCall(self, member, signature, args, reply, error):
        """Calls `member` on the default agent as bluetoothd would (from org.bluez's
        connection); replies with its answer, or fails with the agent's error."""
        b = self.d.bluez
        if b.default_agent is None:
            error(control_error("no default agent"))
            return
        path, _ = b.agents[b.default_agent]
        # bluetoothd asks an agent only about a device it has an object for (the central
        # that is pairing): one named by its stand-in path is made, connected, if new.
        if args and isinstance(args[0], dbus.ObjectPath) and str(args[0]) not in self.d.devices:
            self._connected_at(str(args[0]))
        msg = dbus.lowlevel.MethodCallMessage(b.default_agent, path, "org.bluez.Agent1", str(member))
        if signature:
            msg.append(signature=str(signature), *list(args))
        self.d.log("agent call %s(%s)" % (member, ", ".join(str(a) for a in args)))
        self.connection.send_message_with_reply(
            msg, _AgentReply(reply, error), require_main_loop=True)

    def _connected_at(self, path):
        """A connected Device1 at `path` = /org/bluez/<adapter>/dev_<address>, the stand-in's
        own way of naming a new one."""
        import bluez_objects
        adapter, _, leaf = path[len("/org/bluez/"):].partition("/")
        if adapter not in self.d.adapters or not leaf.startswith("dev_"):
            return
        device = self.d.add_device(adapter, leaf[4:].replace("_", ":"))
        device.update(bluez_objects.DEVICE1, Connected=dbus.Boolean(True))

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def RemoveAdapter(self, name):
        self.d.remove_adapter(str(name))

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def AddAdapter(self, name):
        self.d.add_adapter(str(name))


class _AgentReply:
    """dbus-python's reply handler for AgentCall: the agent's answer or error."""

    def __init__(self, reply, error):
        self.reply, self.error = reply, error

    def __call__(self, message):
        if isinstance(message, dbus.lowlevel.ErrorMessage):
            args = message.get_args_list()
            self.error(dbus.exceptions.DBusException(args[0] if args else "", name=message.get_error_name()))
        else:
            self.reply(dbus.Array(message.get_args_list(), signature="v"))
