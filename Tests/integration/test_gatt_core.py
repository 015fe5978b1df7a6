# SPDX-License-Identifier: MIT
"""gattd's GATT server against the stand-in bluetoothd.

Attributes are found by UUID through the stand-in's Attributes(), never by path.
Skipped with a clear message when the gattd binary is not built.
"""

import signal

import dbus
import pytest

from harness import DEVICE, DEVICE2, one_by_uuid, by_uuid
from fixtures import path_of, read, write

WAIT_MS = dbus.UInt32(10000)
MTU = dbus.UInt16(23)
ZERO = dbus.UInt16(0)

HEART_RATE = "180d"
BATTERY = "180f"
HR_MEASUREMENT = "2a37"
DEVICE_LABEL = "12345678-1234-5678-1234-56789abcdef1"
LONG_VALUE = "12345678-1234-5678-1234-56789abcde01"
WRITE_ONLY = "12345678-1234-5678-1234-56789abcde02"
READ_ONLY = "12345678-1234-5678-1234-56789abcde03"
ECHO = "12345678-1234-5678-1234-56789abcde04"
LONG_BYTES = bytes(range(256)) + bytes(range(44))


def full(uuid):
    from bluez_rules import normalize_uuid
    return normalize_uuid(uuid)


@pytest.fixture
def gattd(start_gattd, standin):
    g = start_gattd("core.json")
    owner, path = standin.call("WaitForApplication", WAIT_MS)
    yield g, str(owner), str(path)
    assert g.alive(), "gattd exited during the test"


def dbus_error(call, *args):
    with pytest.raises(dbus.exceptions.DBusException) as err:
        call(*args)
    return err.value.get_dbus_name()


def att_write(standin, uuid, value, offset=0):
    return int(standin.call("WriteAtt", path_of(standin, uuid), dbus.ByteArray(value),
                            dbus.UInt16(offset), MTU, DEVICE, False))


def test_registered_tree_matches_config(gattd, standin):
    _, _, app_path = gattd
    # One application per service; services joined by includes (heart-rate includes battery) together.
    assert app_path.startswith("/org/gattd/app/")
    assert sorted(str(path) for _, path in standin.call("Applications")) == ["/org/gattd/app/battery", "/org/gattd/app/test"]
    attrs = standin.call("Attributes")
    services = [a for a in attrs if a["kind"] == "service"]
    assert sorted(str(s["uuid"]) for s in services) == sorted(full(u) for u in (HEART_RATE, BATTERY, "12345678-1234-5678-1234-56789abcdef0"))
    hr, battery = one_by_uuid(attrs, HEART_RATE), one_by_uuid(attrs, BATTERY)
    assert bool(hr["primary"]) and not bool(battery["primary"])
    # The include survives only if gattd put battery before heart-rate in its reply.
    assert list(hr["includes"]) == [battery["path"]]
    assert list(one_by_uuid(attrs, HR_MEASUREMENT)["flags"]) == ["notify"]
    assert list(one_by_uuid(attrs, DEVICE_LABEL)["flags"]) == ["read", "write"]
    user_desc = one_by_uuid(attrs, "2901")
    assert user_desc["parent"] == one_by_uuid(attrs, HR_MEASUREMENT)["path"]
    assert by_uuid(attrs, "2902") == [] and by_uuid(attrs, "2900") == []
    assert list(standin.call("Warnings")) == []


def test_reads_with_and_without_offset(gattd, standin):
    assert read(standin, DEVICE_LABEL) == b"hello"
    assert read(standin, DEVICE_LABEL, offset=2) == b"llo"
    assert read(standin, DEVICE_LABEL, offset=5) == b""
    assert read(standin, "2901") == b"Heart rate"
    name = dbus_error(read, standin, DEVICE_LABEL, 6)
    assert name == "org.bluez.Error.InvalidOffset"
    code, _ = standin.call("ReadAtt", path_of(standin, DEVICE_LABEL), dbus.UInt16(6), MTU, DEVICE)
    assert int(code) == 0x07


def test_long_read_reassembles_300_bytes(gattd, standin):
    code, value = standin.call("LongRead", path_of(standin, LONG_VALUE), MTU, DEVICE)
    assert int(code) == 0 and bytes(value) == LONG_BYTES
    reads = [l for l in standin.call("Log") if "ReadValue %s" % path_of(standin, LONG_VALUE) in l]
    assert len(reads) == 14          # ceil(300 / 22) PDUs, the last one short


def test_write_within_limits_then_read_back(gattd, standin):
    write(standin, DEVICE_LABEL, b"hi")
    assert read(standin, DEVICE_LABEL) == b"hi"
    write(standin, DEVICE_LABEL, b"x" * 20)
    assert read(standin, DEVICE_LABEL) == b"x" * 20


def test_length_limits_give_invalid_value_length(gattd, standin):
    assert dbus_error(write, standin, DEVICE_LABEL, b"x" * 21) == "org.bluez.Error.InvalidValueLength"
    assert dbus_error(write, standin, DEVICE_LABEL, b"") == "org.bluez.Error.InvalidValueLength"
    assert att_write(standin, DEVICE_LABEL, b"x" * 21) == 0x0D
    assert read(standin, DEVICE_LABEL) == b"hello"


def test_write_at_offset_keeps_head_and_checks_max(gattd, standin):
    write(standin, DEVICE_LABEL, b"p!", offset=3)
    assert read(standin, DEVICE_LABEL) == b"help!"
    assert dbus_error(write, standin, DEVICE_LABEL, b"y" * 18, 3) == "org.bluez.Error.InvalidValueLength"
    assert read(standin, DEVICE_LABEL) == b"help!"


def test_permissions_on_read_only_and_write_only(gattd, standin):
    assert dbus_error(write, standin, READ_ONLY, b"x") == "org.bluez.Error.NotPermitted"
    assert int(standin.call("AttError", "write", "org.bluez.Error.NotPermitted", "")) == 0x03
    assert dbus_error(read, standin, WRITE_ONLY) == "org.bluez.Error.NotPermitted"
    assert int(standin.call("AttError", "read", "org.bluez.Error.NotPermitted", "")) == 0x02
    assert read(standin, READ_ONLY) == b"fixed"


def test_notify_follows_start_and_stop(gattd, standin):
    echo = path_of(standin, ECHO)
    assert int(standin.call("Subscribe", echo, DEVICE)) == 0
    write(standin, ECHO, b"\x01\x02")
    values = standin.call("WaitForNotifications", echo, dbus.UInt32(1), WAIT_MS)
    assert bytes(values[0]) == b"\x01\x02"
    standin.call("Unsubscribe", echo, DEVICE)
    write(standin, ECHO, b"\x03")
    # A read after the write is ordered after any PropertiesChanged gattd would emit.
    assert read(standin, ECHO) == b"\x03"
    assert [bytes(v) for v in standin.call("Notifications", echo)] == [b"\x01\x02"]


def test_two_subscribers_one_start_notify(gattd, standin):
    echo = path_of(standin, ECHO)
    standin.call("Subscribe", echo, DEVICE)
    standin.call("Subscribe", echo, DEVICE2)
    standin.call("Unsubscribe", echo, DEVICE)
    write(standin, ECHO, b"\x07")
    assert bytes(standin.call("WaitForNotifications", echo, dbus.UInt32(1), WAIT_MS)[0]) == b"\x07"


def test_confirm_is_accepted_and_gattd_keeps_serving(gattd, standin):
    standin.call("Confirm", path_of(standin, ECHO))
    assert read(standin, DEVICE_LABEL) == b"hello"


@pytest.mark.parametrize("member,signature,args", [
    ("ReadValue", "s", [dbus.String("not a dict")]),
    ("ReadValue", "a{sv}", [dbus.Dictionary({"device": dbus.ObjectPath(DEVICE), "offset": dbus.UInt16(65535)}, signature="sv")]),
    ("WriteValue", "aya{sv}", [dbus.ByteArray(b"z" * 100000), dbus.Dictionary({"device": dbus.ObjectPath(DEVICE)}, signature="sv")]),
    ("WriteValue", "a{sv}", [dbus.Dictionary({}, signature="sv")]),
])
def test_malformed_calls_get_errors_and_gattd_keeps_serving(gattd, standin, member, signature, args):
    error, _, _ = standin.call("RawCall", path_of(standin, DEVICE_LABEL), "org.bluez.GattCharacteristic1",
                               member, signature, dbus.Array(args, signature="v"))
    assert str(error) != ""
    assert read(standin, DEVICE_LABEL) == b"hello"


def test_impostor_gets_not_authorized_and_changes_nothing(gattd, standin, private_bus):
    _, owner, _ = gattd
    conn = private_bus.connect()
    label = dbus.Interface(conn.get_object(owner, path_of(standin, DEVICE_LABEL), introspect=False),
                           "org.bluez.GattCharacteristic1")
    opts = dbus.Dictionary({"device": dbus.ObjectPath(DEVICE)}, signature="sv")
    assert dbus_error(label.WriteValue, dbus.ByteArray(b"evil"), opts) == "org.bluez.Error.NotAuthorized"
    assert dbus_error(label.ReadValue, opts) == "org.bluez.Error.NotAuthorized"
    assert read(standin, DEVICE_LABEL) == b"hello"


def test_bluetoothd_restart_registers_again(gattd, standin):
    g, old_owner, _ = gattd
    standin.restart(signal.SIGKILL)
    owner, path = standin.call("WaitForApplication", WAIT_MS)
    assert str(path).startswith("/org/gattd/app/")
    assert read(standin, DEVICE_LABEL) == b"hello"


def test_adapter_removed_and_added_registers_again(gattd, standin):
    standin.call("RemoveAdapter", "hci0")
    assert list(standin.call("WaitForApplications", dbus.UInt32(0), WAIT_MS)) == []
    standin.call("AddAdapter", "hci0")
    owner, path = standin.call("WaitForApplication", WAIT_MS)
    assert str(path).startswith("/org/gattd/app/")
    assert read(standin, DEVICE_LABEL) == b"hello"
