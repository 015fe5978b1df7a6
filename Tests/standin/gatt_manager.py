# SPDX-License-Identifier: MIT
"""GattManager1 behaviour of bluetoothd 5.66: registration handshake and app lifetime.

RegisterApplication replies late: the stand-in first calls GetManagedObjects on
the sender at exactly the application path, builds the database (gatt_app.py),
then replies. The app owner leaving the bus drops the registration; an
InterfacesRemoved for a service path removes that service.
"""

import time

import dbus
from gi.repository import GLib

import emulation
import gatt_app
from bluez_objects import bluez_error

OM = "org.freedesktop.DBus.ObjectManager"
PROPS = "org.freedesktop.DBus.Properties"
APP_CALL_TIMEOUT_S = 30.0


def now_us():
    return time.monotonic_ns() // 1000


class Notification:
    """A Value seen in PropertiesChanged on a registered characteristic, or read from its
    AcquireNotify socket."""

    def __init__(self, value, t_us, subscribers, via="signal"):
        self.value = value
        self.t_us = t_us
        self.subscribers = subscribers
        self.via = via                  # "signal" (PropertiesChanged) or "socket" (AcquireNotify)


class GattManager:
    """Registered applications across adapters, keyed by (adapter, owner, path)."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.bus = daemon.bus
        self.apps = {}               # (adapter, owner, path) -> GattApp
        self.pending = set()         # registrations waiting for GetManagedObjects
        self.allocators = {}         # adapter -> HandleAllocator
        self.owner_watches = {}      # owner -> NameOwnerWatch
        self.signal_matches = {}     # owner -> [SignalMatch]
        self.notifications = {}      # chrc path -> [Notification]
        self.subscribers = {}        # chrc path -> set(device)
        self.listeners = []          # callables(event, app_or_path)
        self.reply_delay_ms = 0      # test knob: hold RegisterApplication's reply this long
        self.delayed = set()         # registrations whose objects are in, reply held back

    # -- registration -------------------------------------------------------------

    def register(self, adapter, sender, path, reply, error):
        key = (adapter.name, sender, path)
        if key in self.apps or key in self.pending:
            error(bluez_error("AlreadyExists", "Already Exists"))
            return
        if not path.startswith("/"):
            error(bluez_error("InvalidArguments", "Invalid arguments in method call"))
            return
        self.pending.add(key)
        self._watch_owner(sender)
        self.daemon.log("RegisterApplication %s %s on %s: GetManagedObjects" % (sender, path, adapter.name))

        def on_objects(objects):
            if not self.reply_delay_ms:
                self._finish(adapter, sender, path, objects, reply, error)
                return
            # bluetoothd busy between reading the tree and answering: the window in which
            # a client's reload races with its own registration.
            self.delayed.add(key)
            self.daemon.log("RegisterApplication %s %s: objects read, reply held %d ms"
                            % (sender, path, self.reply_delay_ms))

            def later():
                self.delayed.discard(key)
                self._finish(adapter, sender, path, objects, reply, error)
                if key not in self.apps:      # refused or dropped meanwhile: waiters see it too
                    for listener in list(self.listeners):
                        listener("settled", None)
                return False
            GLib.timeout_add(self.reply_delay_ms, later)
            for listener in list(self.listeners):
                listener("delayed", None)

        def on_error(exc):
            # gdbus goes on to "ready" with no proxies: "No object received".
            self.daemon.log("GetManagedObjects on %s%s failed: %s" % (sender, path, exc.get_dbus_name()))
            self._finish(adapter, sender, path, {}, reply, error)

        self.bus.call_async(sender, path, OM, "GetManagedObjects", "", (),
                            on_objects, on_error, timeout=APP_CALL_TIMEOUT_S)

    def _finish(self, adapter, sender, path, objects, reply, error):
        key = (adapter.name, sender, path)
        if key not in self.pending:
            return                    # owner left or adapter removed meanwhile
        self.pending.discard(key)
        missing = self.daemon.emulation.refuse_without_handle and emulation.characteristic_without_handle(objects)
        if missing:
            self.daemon.log("RegisterApplication %s %s refused: %s (%s has no Handle)"
                            % (sender, path, emulation.DB_ENTRY_FAILED, missing))
            error(bluez_error("Failed", emulation.DB_ENTRY_FAILED))
            return
        allocator = self.allocators.setdefault(adapter.name, gatt_app.HandleAllocator())
        try:
            app = gatt_app.build_app(sender, path, adapter.name, objects, allocator,
                                     handles_by_index=self.daemon.emulation.handles_by_index)
        except gatt_app.RegistrationFailed as failure:
            self.daemon.log("RegisterApplication %s %s refused: %s (%s)"
                            % (sender, path, failure.message, failure.reason))
            error(bluez_error("Failed", failure.message))
            return
        self.apps[key] = app
        for warning in app.warnings:
            self.daemon.warn(warning)
        self._watch_signals(sender)
        self._write_back_handles(app)
        self.daemon.log("RegisterApplication %s %s: registered %d services"
                        % (sender, path, len(app.services)))
        reply()
        for listener in list(self.listeners):
            listener("registered", app)

    def _write_back_handles(self, app):
        """Properties.Set("Handle") only on objects that expose a Handle property."""
        ifaces = {"service": gatt_app.SERVICE_IFACE, "characteristic": gatt_app.CHRC_IFACE,
                  "descriptor": gatt_app.DESC_IFACE}
        for attr in app.attributes():
            if attr.wants_handle_writeback and not int(attr.props.get("Handle", 0) or 0):
                self.bus.call_async(app.owner, attr.path, PROPS, "Set", "ssv",
                                    (ifaces[attr.kind], "Handle", dbus.UInt16(attr.handle)),
                                    lambda *a: None, lambda e: None, timeout=APP_CALL_TIMEOUT_S)

    def unregister(self, adapter, sender, path):
        app = self.apps.pop((adapter.name, sender, path), None)
        if app is None:
            raise bluez_error("DoesNotExist", "Does Not Exist")
        self._drop(app, "UnregisterApplication")

    def _drop(self, app, why):
        allocator = self.allocators.get(app.adapter)
        paths = [a.path for a in app.attributes()]     # before the services go
        for svc in list(app.services):
            app.remove_service(svc.path, allocator)
        for attr_path in paths:
            self.subscribers.pop(attr_path, None)
        self.daemon.acquired.drop_app(set(paths))
        self.daemon.log("application %s %s dropped (%s)" % (app.owner, app.path, why))
        for listener in list(self.listeners):
            listener("dropped", app)

    def drop_adapter(self, adapter_name):
        """Adapter removed: its apps are dropped silently (no callback to the app)."""
        for key in [k for k in self.apps if k[0] == adapter_name]:
            self._drop(self.apps.pop(key), "adapter %s removed" % adapter_name)
        self.pending = {k for k in self.pending if k[0] != adapter_name}
        self.allocators.pop(adapter_name, None)

    # -- owner and signal watching ---------------------------------------------

    def _watch_owner(self, owner):
        if owner in self.owner_watches:
            return

        def changed(new_owner):
            if new_owner == "":
                self._owner_gone(owner)

        self.owner_watches[owner] = self.bus.watch_name_owner(owner, changed)

    def _owner_gone(self, owner):
        for key in [k for k in self.apps if k[1] == owner]:
            self._drop(self.apps.pop(key), "owner %s left the bus" % owner)
        self.pending = {k for k in self.pending if k[1] != owner}
        self.daemon.adverts.owner_gone(owner)
        watch = self.owner_watches.pop(owner, None)
        if watch is not None:
            watch.cancel()
        for match in self.signal_matches.pop(owner, []):
            match.remove()

    def _watch_signals(self, owner):
        if owner in self.signal_matches:
            return
        self.signal_matches[owner] = [
            self.bus.add_signal_receiver(
                lambda iface, changed, invalidated, path=None: self._properties_changed(owner, path, iface, changed),
                signal_name="PropertiesChanged", dbus_interface=PROPS, bus_name=owner,
                path_keyword="path", byte_arrays=True),
            self.bus.add_signal_receiver(
                lambda obj, ifaces, path=None: self._interfaces_removed(owner, path, obj, ifaces),
                signal_name="InterfacesRemoved", dbus_interface=OM, bus_name=owner,
                path_keyword="path"),
        ]

    def find(self, path):
        """(app, attribute) for a registered attribute path, or (None, None)."""
        for app in self.apps.values():
            attr = app.by_path.get(path)
            if attr is not None:
                return app, attr
        return None, None

    def _properties_changed(self, owner, path, iface, changed):
        if iface != gatt_app.CHRC_IFACE or "Value" not in changed:
            return
        app, attr = self.find(str(path))
        # bluetoothd's match is sender + path_namespace=<app path>.
        if app is None or app.owner != owner or attr.kind != "characteristic":
            return
        if not (str(path) == app.path or app.path == "/" or str(path).startswith(app.path + "/")):
            return
        value = changed["Value"]
        if not isinstance(value, dbus.ByteArray):
            self.daemon.warn("%s emitted Value of type other than ay; bluetoothd ignores it" % path)
            return
        subs = len(self.subscribers.get(attr.path, ()))
        self.notifications.setdefault(attr.path, []).append(Notification(bytes(value), now_us(), subs))
        self.daemon.log("PropertiesChanged Value on %s: %s (%d subscribers)" % (path, bytes(value).hex(), subs))
        for listener in list(self.listeners):
            listener("notification", attr.path)

    def _interfaces_removed(self, owner, om_path, obj, ifaces):
        for key, app in list(self.apps.items()):
            if app.owner != owner or str(om_path) != app.path:
                continue
            if gatt_app.SERVICE_IFACE in ifaces and app.remove_service(str(obj), self.allocators.get(app.adapter)):
                self.daemon.log("service %s removed by InterfacesRemoved" % obj)
