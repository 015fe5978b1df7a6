# SPDX-License-Identifier: MIT
"""bluetoothd's rules as the stand-in models them: ATT error mapping, database
building from a GetManagedObjects reply, advertisement parsing and AD budget."""

import dbus
import pytest

import adv_rules
import bluez_rules as rules
import gatt_app
from gatt_app import RegistrationFailed, build_app, HandleAllocator

S, C, D = gatt_app.SERVICE_IFACE, gatt_app.CHRC_IFACE, gatt_app.DESC_IFACE


@pytest.mark.parametrize("op,name,message,code", [
    ("read", "org.bluez.Error.Failed", "0x80", 0x80),
    ("read", "org.bluez.Error.Failed", "0x9f", 0x9F),
    ("read", "org.bluez.Error.Failed", "159", 0x9F),
    ("read", "org.bluez.Error.Failed", "0xa0", 0x0E),
    ("read", "org.bluez.Error.Failed", "0x7f", 0x0E),
    ("read", "org.bluez.Error.Failed", "", 0x0E),
    ("read", "org.bluez.Error.Failed", "boom", 0x80),
    ("read", "org.bluez.Error.Failed", "0x80 ", 0x80),
    ("read", "org.bluez.Error.NotSupported", "", 0x06),
    ("read", "org.bluez.Error.NotAuthorized", "", 0x08),
    ("write", "org.bluez.Error.InvalidValueLength", "", 0x0D),
    ("read", "org.bluez.Error.InvalidOffset", "", 0x07),
    ("write", "org.bluez.Error.InProgress", "", 0xFE),
    ("read", "org.bluez.Error.NotPermitted", "", 0x02),
    ("write", "org.bluez.Error.NotPermitted", "", 0x03),
    ("write", "org.bluez.Error.ImproperlyConfigured", "", 0x0E),   # 5.76+, not on 5.66
    ("read", "org.freedesktop.DBus.Error.InvalidArgs", "", 0x0E),
])
def test_att_error_mapping_matches_bluetoothd_5_66(op, name, message, code):
    assert rules.att_error_for(op, name, message) == code


def test_permission_checks_before_the_app():
    read_only = rules.parse_chrc_flags(["read"])
    assert rules.check_permissions(read_only.perm, rules.PERM_WRITE_MASK, rules.SECURITY_LOW) == 0x03
    notify_only = rules.parse_chrc_flags(["notify"])
    assert rules.check_permissions(notify_only.perm, rules.PERM_READ_MASK, rules.SECURITY_LOW) == 0
    secure = rules.parse_chrc_flags(["secure-read"])
    assert rules.check_permissions(secure.perm, rules.PERM_READ_MASK, rules.SECURITY_HIGH) == 0x05
    assert rules.read_pdu_payload(bytes(600), 517) == bytes(512)
    assert rules.read_pdu_payload(bytes(100), 23) == bytes(22)


def svc(uuid="180D", primary=True, **extra):
    props = {"UUID": dbus.String(uuid), "Primary": dbus.Boolean(primary)}
    props.update(extra)
    return {S: props}


def chrc(service, uuid="2A37", flags=("read",)):
    return {C: {"UUID": dbus.String(uuid), "Service": dbus.ObjectPath(service),
                "Flags": dbus.Array(list(flags), signature="s")}}


def desc(characteristic, uuid="2901", flags=("read",)):
    return {D: {"UUID": dbus.String(uuid), "Characteristic": dbus.ObjectPath(characteristic),
                "Flags": dbus.Array(list(flags), signature="s")}}


def build(objects):
    return build_app(":1.9", "/app", "hci0", objects, HandleAllocator())


def refused(objects):
    with pytest.raises(RegistrationFailed) as err:
        build(objects)
    return err.value.message


def test_valid_tree_gets_handles_with_ccc_and_cep_slots():
    app = build({"/app/s": svc(), "/app/s/c": chrc("/app/s", flags=["read", "notify"]),
                 "/app/s/c/d": desc("/app/s/c"),
                 "/app/s/w": chrc("/app/s", uuid="2A38", flags=["write", "reliable-write"])})
    by = {a.path: a for a in app.attributes()}
    s = by["/app/s"].handle
    assert by["/app/s/c"].handle == s + 2            # declaration, then value
    assert by["/app/s/c/d"].handle == s + 4          # after the CCC bluetoothd adds
    assert by["/app/s/w"].handle == s + 6            # its CEP follows at s + 7
    assert by["/app/s"].uuid == "0000180d-0000-1000-8000-00805f9b34fb"
    assert app.warnings == []


@pytest.mark.parametrize("objects,message", [
    ({}, "No object received"),
    ({"/app/s": svc(uuid="1800")}, "Failed to create entry in database"),
    ({"/app/s": svc(uuid="1801")}, "Failed to create entry in database"),
    ({"/app/s": {S: {"UUID": dbus.String("180D")}}}, "Failed to create entry in database"),
    ({"/app/s": {S: {"Primary": dbus.Boolean(True)}}}, "Failed to create entry in database"),
    ({"/app/s": svc(), "/app/s/c": chrc("/app/s", flags=[])}, "No valid service object found"),
    ({"/app/s": svc(), "/app/s/c": chrc("/app/s", flags=["read", "shout"])}, "No valid service object found"),
    ({"/app/s": svc(), "/app/s/c": chrc("/app/other")}, "No valid service object found"),
    ({"/app/s": svc(), "/app/s/c": chrc("/app/s"), "/app/s/c/d": desc("/app/s/x")}, "No valid service object found"),
    ({"/app/s": svc(), "/app/s/c": chrc("/app/s"), "/app/s/c/d": desc("/app/s/c", flags=["notify"])},
     "No valid service object found"),
    ({"/app/x": {"org.example.Other": {}}}, "No valid service object found"),
])
def test_invalid_trees_are_refused_with_bluetoothd_messages(objects, message):
    assert refused(objects) == message


def test_includes_must_come_earlier():
    later = build({"/app/a": svc(Includes=dbus.Array([dbus.ObjectPath("/app/b")], signature="o")),
                   "/app/b": svc(uuid="180F", primary=False)})
    assert later.by_path["/app/a"].includes == []
    assert any("must come earlier" in w for w in later.warnings)
    earlier = build({"/app/b": svc(uuid="180F", primary=False),
                     "/app/a": svc(Includes=dbus.Array([dbus.ObjectPath("/app/b")], signature="o"))})
    assert earlier.by_path["/app/a"].includes == ["/app/b"]
    assert earlier.warnings == []


def test_app_exported_ccc_is_a_warning():
    app = build({"/app/s": svc(), "/app/s/c": chrc("/app/s", flags=["notify"]),
                 "/app/s/c/ccc": desc("/app/s/c", uuid="2902", flags=["read", "write"])})
    assert any("2902" in w for w in app.warnings)


def ad(**props):
    return {k: v for k, v in props.items()}


def test_advert_budget_and_types():
    mfr = lambda n: dbus.Dictionary({dbus.UInt16(0xFFFF): dbus.Array([dbus.Byte(0)] * n, signature="y")},
                                    signature="qv")
    uuid128 = dbus.Array(["12345678-1234-5678-1234-56789abcdef0"], signature="s")
    base = ad(Type=dbus.String("peripheral"), Discoverable=dbus.Boolean(True), ServiceUUIDs=uuid128)
    fits = dict(base, ManufacturerData=mfr(6))
    assert adv_rules.legacy_ad_length(fits) == 31          # 3 + 18 + 10 (docs/bluez-contract.md §8 example)
    assert adv_rules.legacy_ad_length(fits) <= adv_rules.legacy_max_length(fits, False)
    over = dict(base, ManufacturerData=mfr(7))
    assert adv_rules.legacy_ad_length(over) > adv_rules.legacy_max_length(over, False)
    assert adv_rules.parse_problem(fits) is None
    assert adv_rules.parse_problem(dict(fits, Appearance=dbus.UInt32(1))) is not None
    assert adv_rules.parse_problem(ad(Type=dbus.String("beacon"))) is not None
    assert adv_rules.parse_problem(ad(Type=dbus.String("broadcast"), Discoverable=dbus.Boolean(True))) is not None
    assert adv_rules.parse_problem(ad(LocalName=dbus.String("x"),
                                      Includes=dbus.Array(["local-name"], signature="s"))) is not None


def with_handle(obj, handle):
    (iface, props), = obj.items()
    props["Handle"] = dbus.UInt16(handle)
    return obj


def test_handle_zero_service_goes_after_the_highest_handle_ever_used():
    allocator = HandleAllocator()
    first = build_app(":1.9", "/app", "hci0", {"/app/s": svc(), "/app/s/c": chrc("/app/s")}, allocator)
    start = first.services[0].handle
    allocator.release(start)
    again = build_app(":1.9", "/app", "hci0", {"/app/s": svc(), "/app/s/c": chrc("/app/s")}, allocator)
    assert again.services[0].handle == start + 3, "bluetoothd's next_handle never goes down"
    pinned = build_app(":1.9", "/app2", "hci0", {"/app2/s": with_handle(svc(), start), "/app2/s/c": chrc("/app2/s")},
                       allocator)
    assert pinned.services[0].handle == start, "a requested free range is honoured"
    with pytest.raises(RegistrationFailed) as err:
        build_app(":1.9", "/app3", "hci0", {"/app3/s": with_handle(svc(), start + 1)}, allocator)
    assert err.value.message == "Failed to create entry in database"


@pytest.mark.parametrize("by_index", [False, True])
def test_requested_characteristic_handles(by_index):
    """The consecutive layout is placed the same by 5.66 (numbers) and 5.82 (slots); a
    number that skips a slot is kept as a number by 5.66 and moves the attribute on 5.82."""
    objects = {"/app/s": with_handle(svc(), 0x40),
               "/app/s/a": with_handle(chrc("/app/s", flags=["read", "notify"]), 0x42),
               "/app/s/b": with_handle(chrc("/app/s", uuid="2A38"), 0x45)}
    app = build_app(":1.9", "/app", "hci0", objects, HandleAllocator(), handles_by_index=by_index)
    by = {a.path: a.handle for a in app.attributes()}
    assert by == {"/app/s": 0x40, "/app/s/a": 0x42, "/app/s/b": 0x45}
    outside = dict(objects)
    outside["/app/s/b"] = with_handle(chrc("/app/s", uuid="2A38"), 0x50)
    if by_index:
        with pytest.raises(RegistrationFailed):
            build_app(":1.9", "/app", "hci0", outside, HandleAllocator(), handles_by_index=True)
    else:
        app = build_app(":1.9", "/app", "hci0", outside, HandleAllocator())
        assert {a.path: a.handle for a in app.attributes()}["/app/s/b"] == 0x50
