# SPDX-License-Identifier: MIT
"""gattd's LE advertisements against the stand-in bluetoothd.

The stand-in reads each advertisement's properties before replying, as bluetoothd
does, and records them with their D-Bus types: the tests compare those with the
config. Every wait is on an event (a stand-in reply or a gattd log line) with a
timeout. Skipped with a clear message when the gattd binary is not built.
"""

import os
import subprocess

import dbus
import pytest

from conftest import CONFIGS, gattd_binary
from harness import Standin

WAIT_MS = dbus.UInt32(10000)
MAIN = "/org/gattd/adv/main"
BEACON = "/org/gattd/adv/beacon"


def adverts_by_path(standin):
    return {str(a["path"]): a for a in standin.call("Adverts")}


def wait_registrations(g, advert_id, count, timeout=10):
    """Waits for gattd's `count`-th "advertisement registered" log line for `advert_id`."""
    seen = [0]

    def predicate(line):
        if "advertisement registered" in line and "adv.id=%s " % advert_id in line + " ":
            seen[0] += 1
        return seen[0] >= count
    return g.child.out.wait_for(predicate, timeout) is not None


def wait_for_adverts(g, standin, ids, count=1):
    """All of `ids` registered `count` times by gattd; returns the stand-in's view."""
    for advert_id in ids:
        assert wait_registrations(g, advert_id, count), "advertisement %s not registered (#%d)" % (advert_id, count)
    return adverts_by_path(standin)


def as_bytes(value):
    return bytes(bytearray(int(b) for b in value))


# -- the budget before BlueZ -------------------------------------------------------------


def run_check(config):
    return subprocess.run([gattd_binary(), "--check", "--config", os.path.join(CONFIGS, config)],
                          capture_output=True, text=True, timeout=30)


def test_check_prints_the_byte_breakdown():
    result = run_check("adv-all-keys.json")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    main = [l for l in lines if l.strip().startswith("adv main ")]
    assert main == ["  adv main (peripheral): advertising data 28/31 bytes: 16-bit service UUIDs (180d) 4, "
                    "manufacturer data 0xffff (2 bytes) 6, service data feaa (1 byte) 5, appearance 0x03c1 4, "
                    "data 0x26 (1 byte) 3, flags (limited discoverable) 3, tx power level (added by the kernel) 3; "
                    "scan response 12/31 bytes: complete local name \"gattd-demo\" 12"]
    beacon = [l for l in lines if l.strip().startswith("adv beacon ")]
    assert beacon and "scan response up to 13/31 bytes" in beacon[0]


def test_check_refuses_an_overflow_naming_what_to_shorten():
    result = run_check("adv-overflow.json")
    assert result.returncode == 78
    assert "advertisements[0]: advertising data is 35 bytes, 4 over the 31-byte legacy limit; " \
           "shorten manufacturerData 0xffff by 4 bytes (to 6)" in result.stderr


# -- registration ----------------------------------------------------------------------------


@pytest.fixture
def all_keys(start_gattd, standin):
    g = start_gattd("adv-all-keys.json")
    adverts = wait_for_adverts(g, standin, ["main", "beacon"])
    yield g, adverts
    assert g.alive(), "gattd exited during the test"


def test_every_key_reaches_bluez_with_its_dbus_type(all_keys):
    _, adverts = all_keys
    main = adverts[MAIN]
    assert dict(main["types"]) == {
        "Type": "s", "LocalName": "s", "ServiceUUIDs": "as", "ManufacturerData": "a{qv}",
        "ServiceData": "a{sv}", "Data": "a{yv}", "Appearance": "q", "Includes": "as",
        "Discoverable": "b", "DiscoverableTimeout": "q", "Duration": "q", "Timeout": "q",
        "MinInterval": "u", "MaxInterval": "u", "TxPower": "n",
    }
    p = main["properties"]
    assert str(p["Type"]) == "peripheral" and str(p["LocalName"]) == "gattd-demo"
    assert [str(u) for u in p["ServiceUUIDs"]] == ["180d"]
    assert {int(k): as_bytes(v) for k, v in p["ManufacturerData"].items()} == {0xFFFF: b"\xc0\xde"}
    assert {str(k): as_bytes(v) for k, v in p["ServiceData"].items()} == {"feaa": b"\x10"}
    assert {int(k): as_bytes(v) for k, v in p["Data"].items()} == {0x26: b"\x01"}
    assert int(p["Appearance"]) == 0x03C1 and [str(i) for i in p["Includes"]] == ["tx-power"]
    assert bool(p["Discoverable"]) and int(p["DiscoverableTimeout"]) == 120
    assert (int(p["Duration"]), int(p["Timeout"])) == (2, 600)
    assert (int(p["MinInterval"]), int(p["MaxInterval"]), int(p["TxPower"])) == (100, 200, -4)
    assert int(main["ad_length"]) == 25  # the stand-in's count: bluetoothd's part, without the kernel's tx power

    beacon = adverts[BEACON]
    assert dict(beacon["types"]) == {"Type": "s", "SolicitUUIDs": "as", "Includes": "as",
                                     "Discoverable": "b", "SecondaryChannel": "s"}
    b = beacon["properties"]
    assert str(b["Type"]) == "broadcast" and not bool(b["Discoverable"])
    assert [str(u) for u in b["SolicitUUIDs"]] == ["fe9f", "12345678-1234-5678-1234-56789abcdef0"]
    assert [str(i) for i in b["Includes"]] == ["local-name"] and str(b["SecondaryChannel"]) == "2M"
    # "spare" is disabled: never registered.
    assert "/org/gattd/adv/spare" not in adverts


def test_alias_is_set_on_the_adapter(all_keys, private_bus):
    conn = private_bus.connect()
    adapter = conn.get_object("org.bluez", "/org/bluez/hci0", introspect=False)
    alias = adapter.Get("org.bluez.Adapter1", "Alias", dbus_interface="org.freedesktop.DBus.Properties")
    assert str(alias) == "gattd demo"


def test_ignored_settings_are_warned_about(all_keys):
    g, _ = all_keys
    line = g.child.wait_for_line("ignored by this BlueZ", 10)
    assert line is not None and "main" in line and "minInterval" in line


def test_comes_back_after_bluetoothd_restarts(all_keys, standin):
    g, _ = all_keys
    standin.restart()
    adverts = wait_for_adverts(g, standin, ["main", "beacon"], count=2)
    assert set(adverts) == {MAIN, BEACON}
    assert str(adverts[MAIN]["properties"]["LocalName"]) == "gattd-demo"


def test_comes_back_after_the_adapter_leaves_and_returns(all_keys, standin):
    g, _ = all_keys
    standin.call("RemoveAdapter", "hci0")
    assert adverts_by_path(standin) == {}
    standin.call("AddAdapter", "hci0")
    adverts = wait_for_adverts(g, standin, ["main", "beacon"], count=2)
    assert set(adverts) == {MAIN, BEACON}


def test_power_cycle_keeps_advertising(all_keys, standin):
    g, _ = all_keys
    standin.call("SetPowered", False)
    standin.call("SetPowered", True)
    assert g.child.wait_for_line("adapter powered on", 10) is not None
    # gattd compared ActiveInstances with its own count: still exactly one instance each.
    assert sorted(adverts_by_path(standin)) == [BEACON, MAIN]


def test_release_brings_the_advertisement_back(all_keys, standin):
    g, _ = all_keys
    standin.call("ReleaseAdvert", dbus.ObjectPath(MAIN))
    assert g.child.wait_for_line("released by bluetoothd", 10) is not None
    adverts = wait_for_adverts(g, standin, ["main"], count=2)
    assert MAIN in adverts and BEACON in adverts


def test_timed_out_advertisement_is_not_registered_again(start_gattd, standin):
    g = start_gattd("adv-timeout.json")
    standin.call("WaitForAdvert", WAIT_MS)
    line = g.child.wait_for_line("its timeout expired", 10)
    assert line is not None and "brief" in line
    assert adverts_by_path(standin) == {}
    assert g.alive()


@pytest.fixture
def one_instance(private_bus, tmp_path):
    sd = Standin(private_bus, max_adverts=1, log_path=str(tmp_path / "standin.log"))
    yield sd
    sd.stop()


def test_instance_limit_is_explained(start_gattd, one_instance):
    g = start_gattd("adv-all-keys.json")
    line = g.child.wait_for_line("free advertising instance", 10)
    assert line is not None
    assert "asks for 2 advertisements (main, beacon) but the controller has only 1 free" in line
    refused = g.child.wait_for_line("no free advertising instance", 10)
    assert refused is not None and "adv.id=beacon" in refused
    # main's registration may still be in flight when beacon's refusal is logged.
    one_instance.call("WaitForAdvert", WAIT_MS)
    assert len(adverts_by_path(one_instance)) == 1


def test_readvertise_after_a_central_disconnects(start_gattd, standin):
    """readvertiseAfterDisconnect: a central's Device1.Connected turning false makes gattd
    register that advertisement again (controllers may stop advertising after a
    connection); an advertisement without the flag is left alone."""
    g = start_gattd("adv-readvertise.json")
    wait_for_adverts(g, standin, ["again", "once"])
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", False)
    assert wait_registrations(g, "again", 2), "advertisement again not registered a second time"
    line = g.child.wait_for_line("central disconnected; registering advertisements again", 5)
    assert line is not None and "adv.ids=again " in line + " ", line
    # Same stand-in, same gattd: "once" kept its single registration.
    assert sum(1 for l in g.child.out.lines
               if "advertisement registered" in l and "adv.id=once " in l + " ") == 1
    assert sorted(adverts_by_path(standin)) == ["/org/gattd/adv/again", "/org/gattd/adv/once"]


def test_power_cycle_that_lost_the_instances_registers_again(all_keys, standin):
    """After power-on gattd compares ActiveInstances with what it registered; when the
    controller lost them (no Release was sent) it registers them again."""
    g, _ = all_keys
    standin.call("SetPowered", False)
    assert standin.call("ForgetAdvertisingInstances", "hci0") == 2
    assert adverts_by_path(standin) == {}
    standin.call("SetPowered", True)
    adverts = wait_for_adverts(g, standin, ["main", "beacon"], count=2)
    assert set(adverts) == {MAIN, BEACON}
    assert g.child.wait_for_line("registering them again", 5) is not None
