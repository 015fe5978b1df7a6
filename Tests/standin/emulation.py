# SPDX-License-Identifier: MIT
"""Which bluetoothd the stand-in plays: its version and the properties and refusals that
go with it, for the known problems gattd --doctor and the daemon name (docs/known-problems.md).

`--emulate NAME` picks one; the default, "5.66", is the stand-in's long-standing behaviour
(bluetoothd 5.66 without experimental features). The version is what an executable
answers to `--version`: the harness starts the stand-in with argv[0] set to such a
program (Standin(version=...)), as gattd --doctor finds it through /proc/PID/cmdline.
"""

import dbus

# What bluetoothd's LEAdvertisingManager1 offers from 5.77 on (experimental before):
# SupportedCapabilities with MaxAdvLen/MaxScnRspLen as bytes and the TX power range as
# int16, SupportedFeatures from the controller's MGMT flags (src/advertising.c).
CAPABILITIES = {"MaxAdvLen": dbus.Byte(251), "MaxScnRspLen": dbus.Byte(251),
                "MinTxPower": dbus.Int16(-34), "MaxTxPower": dbus.Int16(10)}
FEATURES = ["CanSetTxPower", "HardwareOffload"]

# bluetoothd's exact answers (src/advertising.c add_client_complete, src/gatt-database.c
# client_ready_cb), identical in 5.66 and 5.82.
ADV_MGMT_FAILED = "Failed to register advertisement"
DB_ENTRY_FAILED = "Failed to create entry in database"

PROFILES = {
    # The default: 5.66 without -E (no SupportedCapabilities/SupportedFeatures).
    "5.66": {"version": "5.66", "capabilities": False},
    # A healthy current bluetoothd.
    "healthy-5.82": {"version": "5.82", "capabilities": True},
    # bluez/bluez #2268/#2269: on a kernel that validates Add Extended Advertising Data's
    # length, every advertisement is refused after its properties were read (bluetoothd logs
    # "Failed to add advertisement: Invalid Parameters (0x0d)", the caller gets Failed).
    "ext-adv-data-length": {"version": "5.79", "capabilities": True, "refuse_adverts": True},
    # bluez/bluez #821: 5.74/5.75 fail to insert a characteristic whose Handle is absent or 0.
    "gatt-handle-required": {"version": "5.75", "capabilities": True, "refuse_without_handle": True},
}


class Emulation:
    def __init__(self, name):
        if name not in PROFILES:
            raise SystemExit("fake_bluetoothd: unknown --emulate %r (one of %s)" % (name, ", ".join(sorted(PROFILES))))
        self.name = name
        profile = PROFILES[name]
        self.version = profile["version"]
        self.capabilities = profile["capabilities"]
        self.refuse_adverts = profile.get("refuse_adverts", False)
        self.refuse_without_handle = profile.get("refuse_without_handle", False)
        # From 5.74 a characteristic's or descriptor's Handle picks its slot in the service
        # (src/shared/gatt-db.c service_get_attribute_index); before, only its number.
        self.handles_by_index = tuple(int(p) for p in self.version.split(".")) >= (5, 74)

    def advertising_properties(self):
        """The LEAdvertisingManager1 properties this version adds to the 5.66 set."""
        if not self.capabilities:
            return {}
        return {"SupportedCapabilities": dbus.Dictionary(CAPABILITIES, signature="sv"),
                "SupportedFeatures": dbus.Array(FEATURES, signature="s")}


def characteristic_without_handle(objects):
    """The path of a GattCharacteristic1 object whose Handle is absent or 0, if any."""
    for path, interfaces in objects.items():
        chrc = interfaces.get("org.bluez.GattCharacteristic1")
        if chrc is not None and not int(chrc.get("Handle", 0) or 0):
            return str(path)
    return None
