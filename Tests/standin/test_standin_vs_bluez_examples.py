# SPDX-License-Identifier: MIT
"""The stand-in against BlueZ's own example server and advertiser (bluez-test-scripts).

If the stand-in accepts and drives these the way bluetoothd does, its behaviour
is trustworthy for gattd's tests. The examples are copied to a temp dir at test
time and pointed at the private bus through DBUS_SYSTEM_BUS_ADDRESS.
"""

import os
import shutil

import dbus
import pytest

from harness import Child, PYTHON, DEVICE, DEVICE2, one_by_uuid

EXAMPLES = "/usr/share/doc/bluez-test-scripts/examples"
GATT_SERVER = os.path.join(EXAMPLES, "example-gatt-server")
ADVERTISEMENT = os.path.join(EXAMPLES, "example-advertisement")

pytestmark = pytest.mark.skipif(
    not (os.path.exists(GATT_SERVER) and os.path.exists(ADVERTISEMENT)),
    reason="BlueZ examples not installed (apt-get install bluez-test-scripts)")

HR_SERVICE = "180d"
HR_MEASUREMENT = "2a37"
BODY_SENSOR_LOCATION = "2a38"
HR_CONTROL_POINT = "2a39"
BATTERY_LEVEL = "2a19"
TEST_CHRC = "12345678-1234-5678-1234-56789abcdef1"
TEST_DESC = "12345678-1234-5678-1234-56789abcdef2"
ENCRYPT_CHRC = "12345678-1234-5678-1234-56789abcdef3"


def run_example(private_bus, tmp_path, script):
    copy = tmp_path / os.path.basename(script)
    shutil.copy(script, copy)
    return Child([PYTHON, str(copy)], env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address})


@pytest.fixture
def gatt_server(private_bus, standin, tmp_path):
    child = run_example(private_bus, tmp_path, GATT_SERVER)
    owner, path = standin.call("WaitForApplication", dbus.UInt32(10000))
    yield child, str(owner), str(path)
    child.stop()


def path_of(standin, uuid):
    return one_by_uuid(standin.call("Attributes"), uuid)["path"]


def test_example_server_registers_and_tree_matches(gatt_server, standin):
    child, owner, path = gatt_server
    assert path == "/"
    assert child.wait_for_line("GATT application registered") is not None
    attrs = standin.call("Attributes")
    services = [a for a in attrs if a["kind"] == "service"]
    assert [str(s["uuid"]) for s in services] == [
        "0000180d-0000-1000-8000-00805f9b34fb", "0000180f-0000-1000-8000-00805f9b34fb",
        "12345678-1234-5678-1234-56789abcdef0"]
    assert all(bool(s["primary"]) for s in services)
    hrm = one_by_uuid(attrs, HR_MEASUREMENT)
    assert list(hrm["flags"]) == ["notify"]
    assert hrm["parent"] == services[0]["path"]
    desc = one_by_uuid(attrs, TEST_DESC)
    assert desc["parent"] == one_by_uuid(attrs, TEST_CHRC)["path"]
    # Handles grow in tree order; no app CCC, so no warning.
    handles = [int(a["handle"]) for a in attrs]
    assert handles == sorted(handles) and len(set(handles)) == len(handles)
    assert list(standin.call("Warnings")) == []
    assert any("RegisterApplication %s / on hci0: GetManagedObjects" % owner in l for l in standin.call("Log"))


def test_read_returns_example_value(gatt_server, standin):
    location = path_of(standin, BODY_SENSOR_LOCATION)
    assert bytes(standin.call("Read", location, dbus.UInt16(0), dbus.UInt16(23), DEVICE)) == b"\x01"
    code, value = standin.call("ReadAtt", location, dbus.UInt16(0), dbus.UInt16(23), DEVICE)
    assert (int(code), bytes(value)) == (0, b"\x01")
    level = bytes(standin.call("Read", path_of(standin, BATTERY_LEVEL), dbus.UInt16(0), dbus.UInt16(23), DEVICE))
    assert len(level) == 1 and level[0] <= 100


def test_write_read_back_and_long_read(gatt_server, standin):
    chrc = path_of(standin, TEST_CHRC)
    standin.call("Write", chrc, dbus.ByteArray(b"hello"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)
    assert bytes(standin.call("Read", chrc, dbus.UInt16(0), dbus.UInt16(23), DEVICE)) == b"hello"
    # The example ignores the offset option, as many apps do: a long read of a value
    # longer than mtu-1 then repeats the head -- the stand-in exposes that faithfully.
    value = bytes(range(40))
    standin.call("Write", chrc, dbus.ByteArray(value), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)
    code, first = standin.call("ReadAtt", chrc, dbus.UInt16(0), dbus.UInt16(23), DEVICE)
    assert (int(code), bytes(first)) == (0, value[:22])
    code, whole = standin.call("LongRead", chrc, dbus.UInt16(100), DEVICE)
    assert (int(code), bytes(whole)) == (0, value)


def test_app_errors_become_att_codes(gatt_server, standin):
    point = path_of(standin, HR_CONTROL_POINT)
    # Failed("0x80") -> application error 0x80; InvalidValueLength -> 0x0D.
    assert int(standin.call("WriteAtt", point, dbus.ByteArray(b"\x02"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)) == 0x80
    assert int(standin.call("WriteAtt", point, dbus.ByteArray(b"\x01\x02"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)) == 0x0D
    assert int(standin.call("WriteAtt", point, dbus.ByteArray(b"\x01"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)) == 0
    with pytest.raises(dbus.exceptions.DBusException) as err:
        standin.call("Write", point, dbus.ByteArray(b"\x02"), dbus.UInt16(0), dbus.UInt16(23), DEVICE, False)
    assert err.value.get_dbus_name() == "org.bluez.Error.Failed"
    assert err.value.get_dbus_message() == "0x80"
    # A write-only characteristic is refused by bluetoothd itself (0x02), never read.
    code, _ = standin.call("ReadAtt", point, dbus.UInt16(0), dbus.UInt16(23), DEVICE)
    assert int(code) == 0x02
    assert not any("ReadValue %s" % point in l for l in standin.call("Log"))


def test_security_flags_enforced_by_bluetoothd(gatt_server, standin):
    chrc = path_of(standin, ENCRYPT_CHRC)
    code, _ = standin.call("ReadAtt", chrc, dbus.UInt16(0), dbus.UInt16(23), DEVICE)
    assert int(code) == 0x0F
    standin.call("SetSecurity", dbus.Byte(2))
    code, value = standin.call("ReadAtt", chrc, dbus.UInt16(0), dbus.UInt16(23), DEVICE)
    assert (int(code), bytes(value)) == (0, b"")


def test_subscriptions_are_reference_counted(gatt_server, standin):
    battery = path_of(standin, BATTERY_LEVEL)
    assert int(standin.call("Subscribe", battery, DEVICE)) == 0
    assert int(standin.call("Subscribe", battery, DEVICE2)) == 0
    # The example notifies its level right away when StartNotify arrives.
    values = standin.call("WaitForNotifications", battery, dbus.UInt32(1), dbus.UInt32(5000))
    assert len(bytes(values[0])) == 1
    standin.call("Unsubscribe", battery, DEVICE)
    log = list(standin.call("Log"))
    assert sum("StartNotify %s" % battery in l for l in log) == 1
    assert not any("StopNotify %s" % battery in l for l in log)
    standin.call("Unsubscribe", battery, DEVICE2)
    assert sum("StopNotify %s" % battery in l for l in standin.call("Log")) == 1
    # A characteristic without notify/indicate: CCC improperly configured.
    assert int(standin.call("Subscribe", path_of(standin, BODY_SENSOR_LOCATION), DEVICE)) == 0xFD


def test_notifications_have_timestamps(gatt_server, standin):
    hrm = path_of(standin, HR_MEASUREMENT)
    standin.call("Subscribe", hrm, DEVICE)
    values = standin.call("WaitForNotifications", hrm, dbus.UInt32(2), dbus.UInt32(5000))
    assert all(bytes(v)[0] & 0x06 == 0x06 for v in values)
    times = [int(t) for t in standin.call("NotificationTimes", hrm)]
    assert len(times) >= 2 and times[1] > times[0]


def test_owner_leaving_drops_application(gatt_server, standin):
    child, _, _ = gatt_server
    child.stop()
    assert list(standin.call("WaitForApplications", dbus.UInt32(0), dbus.UInt32(5000))) == []
    assert list(standin.call("Attributes")) == []


def test_unregister_by_other_sender_does_not_exist(gatt_server, standin, private_bus):
    _, owner, path = gatt_server
    # Registrations are keyed by sender + path: another connection cannot remove it.
    conn = private_bus.connect()
    manager = dbus.Interface(conn.get_object("org.bluez", "/org/bluez/hci0"), "org.bluez.GattManager1")
    with pytest.raises(dbus.exceptions.DBusException) as err:
        manager.UnregisterApplication(dbus.ObjectPath(path))
    assert err.value.get_dbus_name() == "org.bluez.Error.DoesNotExist"
    assert [(str(o), str(p)) for o, p in standin.call("Applications")] == [(owner, path)]


def test_example_advertisement_registered_with_types(private_bus, standin, tmp_path):
    child = run_example(private_bus, tmp_path, ADVERTISEMENT)
    try:
        advert = standin.call("WaitForAdvert", dbus.UInt32(10000))
        assert child.wait_for_line("Advertisement registered") is not None
        assert str(advert["path"]) == "/org/bluez/example/advertisement0"
        assert dict(advert["types"]) == {
            "Type": "s", "ServiceUUIDs": "as", "ManufacturerData": "a{qv}", "ServiceData": "a{sv}",
            "LocalName": "s", "Includes": "as", "Data": "a{yv}"}
        # 6 (2 UUIDs) + 8 (manufacturer) + 9 (service data) + 5 (data 0x26): 28 of the 31-3 left by tx-power.
        assert int(advert["ad_length"]) == 28
        props = dbus.Interface(standin.conn.get_object("org.bluez", "/org/bluez/hci0"),
                               "org.freedesktop.DBus.Properties")
        assert int(props.Get("org.bluez.LEAdvertisingManager1", "ActiveInstances")) == 1
        assert int(props.Get("org.bluez.LEAdvertisingManager1", "SupportedInstances")) == 4
        standin.call("ReleaseAdvert", advert["path"])
        assert child.wait_for_line("Released!") is not None
        assert list(standin.call("Adverts")) == []
    finally:
        child.stop()


def test_removing_adapter_releases_adverts_and_drops_apps(gatt_server, private_bus, standin, tmp_path):
    child = run_example(private_bus, tmp_path, ADVERTISEMENT)
    try:
        standin.call("WaitForAdvert", dbus.UInt32(10000))
        standin.call("RemoveAdapter", "hci0")
        assert child.wait_for_line("Released!") is not None
        assert list(standin.call("Applications")) == []
        om = dbus.Interface(standin.conn.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager")
        assert "/org/bluez/hci0" not in om.GetManagedObjects()
        standin.call("AddAdapter", "hci0")
        assert "org.bluez.GattManager1" in om.GetManagedObjects()["/org/bluez/hci0"]
    finally:
        child.stop()
