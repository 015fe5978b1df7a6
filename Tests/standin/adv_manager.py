# SPDX-License-Identifier: MIT
"""LEAdvertisingManager1 behaviour of bluetoothd 5.66 (docs/bluez-contract.md §8).

RegisterAdvertisement takes an instance at call time (NotPermitted when none is
left), replies late after reading the advert's properties (GetManagedObjects on
the advert path, then Properties.GetAll when the object was not in that reply),
and refuses bad types or a legacy AD payload over budget with
Failed "Failed to parse advertisement.". Registered adverts are watched for
PropertiesChanged; Timeout expiry and adapter removal call Release() (no reply).
"""

import dbus
from gi.repository import GLib

import adv_rules
import emulation
from bluez_objects import bluez_error
from gatt_manager import now_us, APP_CALL_TIMEOUT_S

ADV_IFACE = "org.bluez.LEAdvertisement1"
OM = "org.freedesktop.DBus.ObjectManager"
PROPS = "org.freedesktop.DBus.Properties"
PARSE_FAILED = "Failed to parse advertisement."


class Advert:
    """A registered advertisement with its properties as received (D-Bus typed)."""

    def __init__(self, owner, path, adapter, instance):
        self.owner = owner
        self.path = path
        self.adapter = adapter
        self.instance = instance
        self.props = {}
        self.updates = []
        self.timer = 0
        self.match = None
        self.ad_length = 0

    def as_dict(self):
        return dbus.Dictionary({
            "path": dbus.ObjectPath(self.path), "owner": dbus.String(self.owner),
            "adapter": dbus.String(self.adapter), "instance": dbus.Byte(self.instance),
            "ad_length": dbus.Byte(self.ad_length),
            "properties": dbus.Dictionary(self.props, signature="sv"),
            "types": dbus.Dictionary({k: adv_rules.signature_of(v) for k, v in self.props.items()},
                                     signature="ss"),
            "updates": dbus.UInt32(len(self.updates)),
        }, signature="sv")


class AdvertManager:
    """Adverts across adapters, keyed by (adapter, owner, path)."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.bus = daemon.bus
        self.adverts = {}
        self.pending = {}     # key -> instance
        self.listeners = []

    def _used_instances(self, adapter_name):
        used = {a.instance for k, a in self.adverts.items() if k[0] == adapter_name}
        used |= {i for k, i in self.pending.items() if k[0] == adapter_name}
        return used

    def register(self, adapter, sender, path, reply, error):
        key = (adapter.name, sender, path)
        if key in self.adverts or key in self.pending:
            error(bluez_error("AlreadyExists", "Already Exists"))
            return
        used = self._used_instances(adapter.name)
        free = [i for i in range(1, adapter.max_adverts + 1) if i not in used]
        if not free:
            self.daemon.log("RegisterAdvertisement %s %s: no instance left" % (sender, path))
            error(bluez_error("NotPermitted", "Maximum advertisements reached"))
            return
        self.pending[key] = free[0]
        self.daemon.gatt._watch_owner(sender)
        self.daemon.log("RegisterAdvertisement %s %s on %s: reading properties" % (sender, path, adapter.name))

        def from_getall(props):
            self._finish(adapter, sender, path, props, reply, error)

        def getall_failed(exc):
            # gdbus never gets the proxy: bluetoothd never replies.
            self.daemon.warn("GetAll on advert %s failed (%s): bluetoothd would never reply"
                             % (path, exc.get_dbus_name()))

        def getall():
            self.bus.call_async(sender, path, PROPS, "GetAll", "s", (ADV_IFACE,),
                                from_getall, getall_failed, timeout=APP_CALL_TIMEOUT_S)

        def from_objects(objects):
            entry = objects.get(dbus.ObjectPath(path), {}).get(ADV_IFACE)
            if entry is None:
                getall()
            else:
                self._finish(adapter, sender, path, entry, reply, error)

        def objects_failed(exc):
            self.daemon.log("GetManagedObjects on advert %s failed (%s); falling back to GetAll"
                            % (path, exc.get_dbus_name()))
            getall()

        self.bus.call_async(sender, path, OM, "GetManagedObjects", "", (),
                            from_objects, objects_failed, timeout=APP_CALL_TIMEOUT_S)

    def _finish(self, adapter, sender, path, props, reply, error):
        key = (adapter.name, sender, path)
        if key not in self.pending:
            return
        instance = self.pending.pop(key)
        problem = adv_rules.parse_problem(props)
        discoverable = bool(adapter.props["org.bluez.Adapter1"]["Discoverable"])
        length = adv_rules.legacy_ad_length(props)
        limit = adv_rules.legacy_max_length(props, discoverable)
        if problem is None and length > limit:
            problem = "advertising data too long: %d bytes > %d" % (length, limit)
        if problem is None and "Timeout" in props and "DiscoverableTimeout" in props \
                and int(props["Timeout"]) and int(props["Timeout"]) < int(props["DiscoverableTimeout"]):
            problem = "DiscoverableTimeout > Timeout"
        if problem is not None:
            self.daemon.log("RegisterAdvertisement %s %s refused: %s" % (sender, path, problem))
            error(bluez_error("Failed", PARSE_FAILED))
            return
        if self.daemon.emulation.refuse_adverts:
            # The kernel answers MGMT Add Extended Advertising Data with Invalid Parameters.
            self.daemon.log("RegisterAdvertisement %s %s refused: Failed to add advertisement: "
                            "Invalid Parameters (0x0d)" % (sender, path))
            error(bluez_error("Failed", emulation.ADV_MGMT_FAILED))
            return
        advert = Advert(sender, path, adapter.name, instance)
        advert.props = dict(props)
        advert.ad_length = length
        self.adverts[key] = advert
        advert.match = self.bus.add_signal_receiver(
            lambda iface, changed, invalidated, p=None: self._changed(key, iface, changed),
            signal_name="PropertiesChanged", dbus_interface=PROPS, bus_name=sender, path=path)
        timeout = int(props.get("Timeout", 0))
        if timeout:
            advert.timer = GLib.timeout_add_seconds(timeout, self._expired, key)
        adapter.set_instances(self.count(adapter.name))
        self.daemon.log("RegisterAdvertisement %s %s: instance %d, %d AD bytes"
                        % (sender, path, instance, length))
        reply()
        for listener in list(self.listeners):
            listener("registered", advert)

    def count(self, adapter_name):
        return sum(1 for k in self.adverts if k[0] == adapter_name)

    def _changed(self, key, iface, changed):
        advert = self.adverts.get(key)
        if advert is None or iface != ADV_IFACE:
            return
        for name, value in changed.items():
            advert.props[name] = value
            advert.updates.append({"property": dbus.String(name), "value": value,
                                   "type": dbus.String(adv_rules.signature_of(value)),
                                   "time_us": dbus.UInt64(now_us())})
        self.daemon.log("advert %s updated: %s" % (advert.path, ", ".join(changed.keys())))
        for listener in list(self.listeners):
            listener("updated", advert)

    def _expired(self, key):
        advert = self.adverts.get(key)
        if advert is not None:
            advert.timer = 0
            self._remove(key, release=True, why="Timeout expired")
        return False

    def _remove(self, key, release, why):
        advert = self.adverts.pop(key, None)
        if advert is None:
            return
        if advert.timer:
            GLib.source_remove(advert.timer)
        if advert.match is not None:
            advert.match.remove()
        if release:
            self.daemon.send_no_reply(advert.owner, advert.path, ADV_IFACE, "Release")
        adapter = self.daemon.adapters.get(advert.adapter)
        if adapter is not None:
            adapter.set_instances(self.count(advert.adapter))
        self.daemon.log("advert %s removed (%s%s)" % (advert.path, why, ", Release sent" if release else ""))

    def unregister(self, adapter, sender, path):
        key = (adapter.name, sender, path)
        if key not in self.adverts:
            raise bluez_error("DoesNotExist", "Does Not Exist")
        self._remove(key, release=False, why="UnregisterAdvertisement")

    def release(self, path):
        """Test control: bluetoothd-initiated removal with Release()."""
        keys = [k for k in self.adverts if k[2] == path]
        if not keys:
            raise bluez_error("DoesNotExist", "No advertisement at %s" % path)
        for key in keys:
            self._remove(key, release=True, why="ReleaseAdvert")

    def owner_gone(self, owner):
        for key in [k for k in self.adverts if k[1] == owner]:
            self._remove(key, release=False, why="owner left the bus")
        self.pending = {k: i for k, i in self.pending.items() if k[1] != owner}

    def drop_adapter(self, adapter_name):
        for key in [k for k in self.adverts if k[0] == adapter_name]:
            self._remove(key, release=True, why="adapter removed")
        self.pending = {k: i for k, i in self.pending.items() if k[0] != adapter_name}
