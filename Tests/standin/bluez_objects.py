# SPDX-License-Identifier: MIT
"""The objects the stand-in exports under org.bluez: /, /org/bluez, /org/bluez/hciN.

Method bodies that need daemon state delegate to the Daemon (fake_bluetoothd.py);
this file only owns the D-Bus surface and property bookkeeping.
"""

import dbus
import dbus.service

PROPS = "org.freedesktop.DBus.Properties"
OM = "org.freedesktop.DBus.ObjectManager"
ADAPTER = "org.bluez.Adapter1"
GATT_MANAGER = "org.bluez.GattManager1"
ADV_MANAGER = "org.bluez.LEAdvertisingManager1"


def bluez_error(name, message=""):
    """A DBusException that dbus-python sends as error `org.bluez.Error.<name>`."""
    exc = dbus.exceptions.DBusException(message, name="org.bluez.Error." + name)
    return exc


def check_signature(msg, expected):
    """gdbus refuses a call whose arguments do not have the declared signature."""
    if msg.get_signature() != expected:
        raise bluez_error("InvalidArguments", "Invalid arguments in method call")


class PropertiesObject(dbus.service.Object):
    """An exported object with org.freedesktop.DBus.Properties over self.props.

    self.props maps interface -> {name: dbus value}; self.writable lists
    (interface, name) pairs that Set accepts, each with a validator/applier.
    """

    def __init__(self, conn, path):
        self.props = {}
        self.writable = {}
        super().__init__(conn, path)
        self.path = path

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        try:
            return self.props[interface][name]
        except KeyError:
            raise dbus.exceptions.DBusException(
                "No such property '%s'" % name, name="org.freedesktop.DBus.Error.InvalidArgs")

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return dbus.Dictionary(self.props.get(interface, {}), signature="sv")

    @dbus.service.method(PROPS, in_signature="ssv", out_signature="")
    def Set(self, interface, name, value):
        if interface not in self.props or name not in self.props[interface]:
            raise dbus.exceptions.DBusException(
                "No such property '%s'" % name, name="org.freedesktop.DBus.Error.InvalidArgs")
        setter = self.writable.get((interface, name))
        if setter is None:
            raise dbus.exceptions.DBusException(
                "Property '%s' is not writable" % name,
                name="org.freedesktop.DBus.Error.PropertyReadOnly")
        setter(value)

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def update(self, interface, **changed):
        """Change properties and emit PropertiesChanged for those that differ."""
        diff = {k: v for k, v in changed.items() if self.props[interface].get(k) != v}
        if not diff:
            return
        self.props[interface].update(diff)
        self.PropertiesChanged(interface, dbus.Dictionary(diff, signature="sv"),
                               dbus.Array([], signature="s"))

    def managed(self):
        return {iface: dbus.Dictionary(p, signature="sv") for iface, p in self.props.items()}


class RootObject(dbus.service.Object):
    """`/`: the ObjectManager of org.bluez, as bluetoothd exports it."""

    def __init__(self, conn, daemon):
        super().__init__(conn, "/")
        self.daemon = daemon

    @dbus.service.method(OM, out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return dbus.Dictionary({dbus.ObjectPath(o.path): o.managed() for o in self.daemon.exported()},
                               signature="oa{sa{sv}}")

    @dbus.service.signal(OM, signature="oa{sa{sv}}")
    def InterfacesAdded(self, path, interfaces):
        pass

    @dbus.service.signal(OM, signature="oas")
    def InterfacesRemoved(self, path, interfaces):
        pass


AGENT_MANAGER = "org.bluez.AgentManager1"


class BluezObject(PropertiesObject):
    """`/org/bluez`: AgentManager1 (agents by owner, the default agent) and ProfileManager1
    (listed, without behaviour).

    As bluetoothd: one agent per connection; RegisterAgent checks the capability;
    RequestDefaultAgent only for the caller's own agent; an agent whose owner leaves the bus
    is dropped (and stops being the default). A new default agent makes every adapter
    pairable, as bluetoothd does with main.conf's AlwaysPairable off (its default:
    adapter_set_io_capability sets the kernel's bondable setting).
    """

    CAPABILITIES = ("DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay", "")

    def __init__(self, conn, daemon=None):
        super().__init__(conn, "/org/bluez")
        self.daemon = daemon
        self.props = {AGENT_MANAGER: {}, "org.bluez.ProfileManager1": {}}
        self.agents = {}          # owner -> (path, capability)
        self.default_agent = None  # owner
        self._watches = {}

    def _log(self, line):
        if self.daemon is not None:
            self.daemon.log(line)

    @dbus.service.method(AGENT_MANAGER, in_signature="os", out_signature="", sender_keyword="sender",
                         message_keyword="msg")
    def RegisterAgent(self, path, capability, sender, msg):
        check_signature(msg, "os")
        if str(capability) not in self.CAPABILITIES:
            raise bluez_error("InvalidArguments", "Invalid capability")
        if sender in self.agents:
            raise bluez_error("AlreadyExists", "Already Exists")
        self.agents[sender] = (str(path), str(capability))
        self._watches[sender] = self.connection.watch_name_owner(
            sender, lambda owner, s=sender: owner == "" and self._gone(s))
        self._log("agent registered %s %s %s" % (sender, path, capability))

    @dbus.service.method(AGENT_MANAGER, in_signature="o", out_signature="", sender_keyword="sender",
                         message_keyword="msg")
    def UnregisterAgent(self, path, sender, msg):
        check_signature(msg, "o")
        if self.agents.get(sender, (None,))[0] != str(path):
            raise bluez_error("DoesNotExist", "No such agent")
        self._gone(sender)
        self._log("agent unregistered %s %s" % (sender, path))

    @dbus.service.method(AGENT_MANAGER, in_signature="o", out_signature="", sender_keyword="sender",
                         message_keyword="msg")
    def RequestDefaultAgent(self, path, sender, msg):
        check_signature(msg, "o")
        if self.agents.get(sender, (None,))[0] != str(path):
            raise bluez_error("DoesNotExist", "No such agent")
        self.default_agent = sender
        self._log("default agent %s %s" % (sender, path))
        if self.daemon is not None:
            for adapter in self.daemon.adapters.values():
                if not adapter.props[ADAPTER]["Pairable"]:
                    adapter._set_bool("Pairable", dbus.Boolean(True))

    def _gone(self, owner):
        self.agents.pop(owner, None)
        watch = self._watches.pop(owner, None)
        if watch is not None:
            watch.cancel()
        if self.default_agent == owner:
            self.default_agent = None


class AdapterObject(PropertiesObject):
    """`/org/bluez/hciN`: Adapter1, GattManager1, LEAdvertisingManager1."""

    def __init__(self, conn, daemon, name, index, max_adverts):
        super().__init__(conn, "/org/bluez/" + name)
        self.daemon = daemon
        self.name = name
        self.max_adverts = max_adverts
        address = "00:AA:BB:CC:DD:%02X" % index
        self.props = {
            ADAPTER: {
                "Address": dbus.String(address), "AddressType": dbus.String("public"),
                "Name": dbus.String("standin"), "Alias": dbus.String("standin"),
                "Class": dbus.UInt32(0), "Powered": dbus.Boolean(True),
                "Discoverable": dbus.Boolean(False), "DiscoverableTimeout": dbus.UInt32(180),
                "Pairable": dbus.Boolean(False), "PairableTimeout": dbus.UInt32(0),
                "Discovering": dbus.Boolean(False),
                "UUIDs": dbus.Array(["00001800-0000-1000-8000-00805f9b34fb",
                                     "00001801-0000-1000-8000-00805f9b34fb"], signature="s"),
                "Modalias": dbus.String("usb:v1D6Bp0246d0542"),
                "Roles": dbus.Array(["central", "peripheral"], signature="s"),
                **daemon.acquired.adapter_properties(),
            },
            GATT_MANAGER: {},
            ADV_MANAGER: {
                "ActiveInstances": dbus.Byte(0), "SupportedInstances": dbus.Byte(max_adverts),
                "SupportedIncludes": dbus.Array(["tx-power", "appearance", "local-name"], signature="s"),
                "SupportedSecondaryChannels": dbus.Array(["1M", "2M", "Coded"], signature="s"),
                **daemon.emulation.advertising_properties(),
            },
        }
        self.writable = {
            (ADAPTER, "Alias"): self._set_alias,
            (ADAPTER, "Powered"): lambda v: self._set_bool("Powered", v),
            (ADAPTER, "Discoverable"): lambda v: self._set_bool("Discoverable", v),
            (ADAPTER, "Pairable"): lambda v: self._set_bool("Pairable", v),
            (ADAPTER, "DiscoverableTimeout"): lambda v: self._set_u32("DiscoverableTimeout", v),
            (ADAPTER, "PairableTimeout"): lambda v: self._set_u32("PairableTimeout", v),
        }

    def _set_alias(self, value):
        if not isinstance(value, dbus.String):
            raise dbus.exceptions.DBusException("Alias must be a string",
                                                name="org.freedesktop.DBus.Error.InvalidArgs")
        # bluetoothd: an empty alias resets to the system name.
        self.update(ADAPTER, Alias=dbus.String(str(value) or str(self.props[ADAPTER]["Name"])))
        self.daemon.log("adapter %s Alias=%r" % (self.name, str(value)))

    def _set_bool(self, name, value):
        if not isinstance(value, dbus.Boolean):
            raise dbus.exceptions.DBusException("%s must be a boolean" % name,
                                                name="org.freedesktop.DBus.Error.InvalidArgs")
        self.update(ADAPTER, **{name: dbus.Boolean(bool(value))})
        self.daemon.log("adapter %s %s=%s" % (self.name, name, bool(value)))

    def _set_u32(self, name, value):
        if not isinstance(value, dbus.UInt32):
            raise dbus.exceptions.DBusException("%s must be a uint32" % name,
                                                name="org.freedesktop.DBus.Error.InvalidArgs")
        self.update(ADAPTER, **{name: dbus.UInt32(value)})

    def set_instances(self, active):
        # SupportedInstances is the number of *remaining* instances (docs/bluez-contract.md §8).
        self.update(ADV_MANAGER, ActiveInstances=dbus.Byte(active),
                    SupportedInstances=dbus.Byte(self.max_adverts - active))

    @dbus.service.method(ADAPTER, in_signature="o", out_signature="", sender_keyword="sender",
                         message_keyword="msg")
    def RemoveDevice(self, device, sender, msg):
        check_signature(msg, "o")
        self.daemon.remove_device(self, str(device), sender)

    @dbus.service.method(GATT_MANAGER, in_signature="oa{sv}", out_signature="",
                         sender_keyword="sender", async_callbacks=("reply", "error"),
                         message_keyword="msg")
    def RegisterApplication(self, path, options, sender, reply, error, msg):
        check_signature(msg, "oa{sv}")
        self.daemon.gatt.register(self, sender, str(path), reply, error)

    @dbus.service.method(GATT_MANAGER, in_signature="o", out_signature="",
                         sender_keyword="sender", message_keyword="msg")
    def UnregisterApplication(self, path, sender, msg):
        check_signature(msg, "o")
        self.daemon.gatt.unregister(self, sender, str(path))

    @dbus.service.method(ADV_MANAGER, in_signature="oa{sv}", out_signature="",
                         sender_keyword="sender", async_callbacks=("reply", "error"),
                         message_keyword="msg")
    def RegisterAdvertisement(self, path, options, sender, reply, error, msg):
        check_signature(msg, "oa{sv}")
        self.daemon.adverts.register(self, sender, str(path), reply, error)

    @dbus.service.method(ADV_MANAGER, in_signature="o", out_signature="",
                         sender_keyword="sender", message_keyword="msg")
    def UnregisterAdvertisement(self, path, sender, msg):
        check_signature(msg, "o")
        self.daemon.adverts.unregister(self, sender, str(path))


DEVICE1 = "org.bluez.Device1"


class DeviceObject(PropertiesObject):
    """A remote central as bluetoothd shows it: org.bluez.Device1 with Address, Connected,
    Paired, Bonded and Trusted; Disconnect drops the link.

    Only what a peripheral daemon watches and does is modelled.
    """

    def __init__(self, conn, daemon, adapter_path, address, address_type="public", path_address=None):
        # bluetoothd names the object after the address it first saw (dev_<RPA> for a phone
        # that connected from a private address) and keeps that path when Address changes.
        super().__init__(conn, "%s/dev_%s" % (adapter_path, (path_address or address).replace(":", "_")))
        self.daemon = daemon
        self.props[DEVICE1] = {
            "Address": dbus.String(address),
            "AddressType": dbus.String(address_type),
            "Adapter": dbus.ObjectPath(adapter_path),
            "Connected": dbus.Boolean(False),
            "Paired": dbus.Boolean(False),
            "Bonded": dbus.Boolean(False),
            "Trusted": dbus.Boolean(False),
        }

    @dbus.service.method(DEVICE1, in_signature="", out_signature="", sender_keyword="sender")
    def Disconnect(self, sender):
        self.daemon.log("device %s Disconnect by %s" % (self.path, sender))
        self.update(DEVICE1, Connected=dbus.Boolean(False))
