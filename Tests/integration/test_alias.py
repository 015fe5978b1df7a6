# SPDX-License-Identifier: MIT
"""gattd leaves the adapter named as it found it: the configured `alias` is set while it
runs and the adapter's own alias is put back when it stops."""

import json

import dbus
import pytest

ADAPTER = "/org/bluez/hci0"


def alias(bus):
    props = dbus.Interface(bus.get_object("org.bluez", ADAPTER), "org.freedesktop.DBus.Properties")
    return str(props.Get("org.bluez.Adapter1", "Alias"))


def set_alias(bus, value):
    props = dbus.Interface(bus.get_object("org.bluez", ADAPTER), "org.freedesktop.DBus.Properties")
    props.Set("org.bluez.Adapter1", "Alias", dbus.String(value))


@pytest.mark.parametrize("before", ["kitchen sensor", None])
def test_alias_is_restored_on_exit(start_gattd, standin, private_bus, tmp_path, before):
    bus = private_bus.connect()
    if before is not None:
        set_alias(bus, before)
    name = alias(bus)  # with no alias set, bluetoothd reports the adapter's name
    config = tmp_path / "alias.json"
    config.write_text(json.dumps({"version": 1, "alias": "gattd test alias", "services": [{
        "id": "s", "uuid": "180F", "characteristics": [{"id": "b", "uuid": "2A19", "flags": ["read"]}]}]}))
    g = start_gattd(str(config))
    assert g.child.wait_for_line("adapter alias set", 10)
    assert alias(bus) == "gattd test alias"
    g.stop()
    assert g.child.proc.returncode == 0
    assert alias(bus) == name, "put back as gattd found it"
    assert any("adapter alias restored" in line for line in g.child.out.lines)
