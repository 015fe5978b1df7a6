# SPDX-License-Identifier: MIT
"""How bluetoothd 5.66 parses an LEAdvertisement1 and sizes its legacy AD payload.

Pure functions over dbus-python values (no I/O). Models src/advertising.c's
parsers table (property -> expected D-Bus type) and refresh_legacy_adv's check
"AD length > calc_max_adv_len" which fails registration with
"Failed to parse advertisement." (docs/bluez-contract.md §8).
"""

import dbus

from bluez_rules import normalize_uuid, BASE_UUID_SUFFIX

LEGACY_MAX_ADV_LEN = 31
KNOWN_INCLUDES = ("tx-power", "appearance", "local-name")
SECONDARY_CHANNELS = ("1M", "2M", "Coded")


def signature_of(value):
    """D-Bus signature of a dbus-python value as it arrived (variant contents)."""
    simple = [
        (dbus.Boolean, "b"), (dbus.Byte, "y"), (dbus.Int16, "n"), (dbus.UInt16, "q"),
        (dbus.Int32, "i"), (dbus.UInt32, "u"), (dbus.Int64, "x"), (dbus.UInt64, "t"),
        (dbus.Double, "d"), (dbus.ObjectPath, "o"), (dbus.Signature, "g"),
        (dbus.String, "s"), (dbus.ByteArray, "ay"),
    ]
    for cls, sig in simple:
        if isinstance(value, cls):
            return sig
    if isinstance(value, dbus.Dictionary):
        return "a{%s}" % (value.signature or "sv")
    if isinstance(value, dbus.Array):
        return "a%s" % (value.signature or "v")
    if isinstance(value, dbus.Struct):
        return "(%s)" % (value.signature or "".join(signature_of(v) for v in value))
    if isinstance(value, bool):
        return "b"
    if isinstance(value, str):
        return "s"
    if isinstance(value, bytes):
        return "ay"
    return "?"


def _is_bytes(value):
    return signature_of(value) == "ay"


EXPECTED = {
    "Type": "s", "ServiceUUIDs": "as", "SolicitUUIDs": "as", "ManufacturerData": "a{qv}",
    "ServiceData": "a{sv}", "Includes": "as", "LocalName": "s", "Appearance": "q",
    "Duration": "q", "Timeout": "q", "Data": "a{yv}", "Discoverable": "b",
    "DiscoverableTimeout": "q", "SecondaryChannel": "s", "MinInterval": "u",
    "MaxInterval": "u", "TxPower": "n",
}


def parse_problem(props):
    """None if bluetoothd would accept these properties, else a reason string.

    Unknown properties are ignored, as bluetoothd ignores names not in its table.
    """
    for name, expected in EXPECTED.items():
        if name not in props:
            continue
        value = props[name]
        sig = signature_of(value)
        if sig != expected:
            return "%s has type %s, bluetoothd expects %s" % (name, sig, expected)
        if name == "Type" and str(value) not in ("broadcast", "peripheral"):
            return "Type %r is neither broadcast nor peripheral" % str(value)
        if name in ("ServiceUUIDs", "SolicitUUIDs"):
            for u in value:
                if normalize_uuid(u) is None:
                    return "%s contains invalid UUID %r" % (name, str(u))
        if name in ("ManufacturerData", "Data"):
            for v in value.values():
                if not _is_bytes(v):
                    return "%s value has type %s, expected ay" % (name, signature_of(v))
        if name == "ServiceData":
            for k, v in value.items():
                if normalize_uuid(k) is None or not _is_bytes(v):
                    return "ServiceData entry %r is invalid" % str(k)
        if name == "SecondaryChannel" and str(value) not in SECONDARY_CHANNELS:
            return "SecondaryChannel %r is not supported" % str(value)
    includes = [str(i) for i in props.get("Includes", [])]
    if "LocalName" in props and "local-name" in includes:
        return "LocalName and Includes local-name are mutually exclusive"
    if "Appearance" in props and "appearance" in includes:
        return "Appearance and Includes appearance are mutually exclusive"
    if props.get("Type", "broadcast") == "broadcast" and bool(props.get("Discoverable", False)):
        return "Broadcast cannot set flags"
    if "MinInterval" in props and "MaxInterval" in props and \
            int(props["MinInterval"]) > int(props["MaxInterval"]):
        return "MinInterval must be less than MaxInterval"
    return None


def _uuid_size(text):
    """Bytes one UUID takes in an AD list: 2, 4 or 16 (short form when on the base)."""
    full = normalize_uuid(text)
    if full is None or not full.endswith(BASE_UUID_SUFFIX):
        return 16
    return 2 if int(full[:8], 16) <= 0xFFFF else 4


def _uuid_lists_length(uuids):
    sizes = [_uuid_size(u) for u in uuids]
    total = 0
    for size in (2, 4, 16):
        n = sizes.count(size)
        if n:
            total += 2 + n * size
    return total


def legacy_ad_length(props):
    """Bytes of the advertising data bluetoothd generates (the name is not here:
    it goes to the scan response on the legacy path)."""
    length = 0
    length += _uuid_lists_length(props.get("ServiceUUIDs", []))
    length += _uuid_lists_length(props.get("SolicitUUIDs", []))
    for data in props.get("ManufacturerData", {}).values():
        length += 4 + len(data)
    for uuid, data in props.get("ServiceData", {}).items():
        length += 2 + _uuid_size(uuid) + len(data)
    for data in props.get("Data", {}).values():
        length += 2 + len(data)
    if bool(props.get("Discoverable", False)):
        length += 3
    if "Appearance" in props:
        length += 4
    return length


def legacy_max_length(props, adapter_discoverable):
    """calc_max_adv_len: 31 minus the space the kernel adds for tx-power (3),
    the Flags AD it manages (3) and appearance (4)."""
    includes = [str(i) for i in props.get("Includes", [])]
    limit = LEGACY_MAX_ADV_LEN
    if "tx-power" in includes:
        limit -= 3
    peripheral = props.get("Type", "broadcast") == "peripheral"
    if peripheral and adapter_discoverable and not bool(props.get("Discoverable", False)):
        limit -= 3
    if "appearance" in includes:
        limit -= 4
    return limit
