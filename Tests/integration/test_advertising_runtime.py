# SPDX-License-Identifier: MIT
"""Advertising at run time: `gattctl advertise set` / SetAdvertisementData
change an advertisement's data live, checked like --check, without registering again, and
kept across restarts only when asked."""

import functools

import dbus
import pytest

from conftest import run_gattctl

MAIN = "/org/gattd/adv/main"
BEACON = "/org/gattd/adv/beacon"
WAIT = dbus.UInt32(10000)


@pytest.fixture
def ctl(private_bus):
    """ctl(*args) -> CompletedProcess, gattctl talking to gattd on the private bus."""
    return functools.partial(run_gattctl, private_bus)


def start(start_gattd, standin, state_dir=None):
    g = start_gattd("control.json", state_dir=state_dir)
    standin.call("WaitForApplication", WAIT)
    assert g.child.wait_for_line("control API ready", 10)
    registered = [0]

    def two(line):
        registered[0] += "advertisement registered" in line
        return registered[0] >= 2
    assert g.child.out.wait_for(two, 10), "both advertisements registered"
    return g


def props(standin, path):
    return {str(a["path"]): a for a in standin.call("Adverts")}[path]


def registrations(g):
    return sum("advertisement registered" in line for line in g.child.out.lines)


def test_live_change_reaches_bluetoothd_without_registering_again(start_gattd, standin, ctl):
    g = start(start_gattd, standin)
    result = ctl("advertise", "set", "beacon", '{"manufacturerData": {"0xFFFF": {"hex": "0102"}}, "localName": null}')
    assert (result.returncode, result.stdout.strip()) == (0, "beacon: changed"), result.stderr
    updates = standin.call("WaitForAdvertUpdates", BEACON, dbus.UInt32(1), WAIT)
    assert [str(u["property"]) for u in updates] == ["ManufacturerData"]
    advert = props(standin, BEACON)
    assert {int(k): bytes(v) for k, v in advert["properties"]["ManufacturerData"].items()} == {0xFFFF: b"\x01\x02"}
    assert int(advert["updates"]) == 1
    # A rotating beacon: ten more changes, still one registration each.
    for n in range(10):
        assert ctl("advertise", "set", "beacon", '{"manufacturerData": {"0xFFFF": {"uint8": %d}}}' % n).returncode == 0
    standin.call("WaitForAdvertUpdates", BEACON, dbus.UInt32(11), WAIT)
    assert registrations(g) == 2, "no new registration for a data change"


def test_refused_changes_name_the_problem_and_change_nothing(start_gattd, standin, ctl):
    start(start_gattd, standin)
    too_big = ctl("advertise", "set", "beacon", '{"manufacturerData": {"0xFFFF": {"hex": "%s"}}}' % ("ab" * 40))
    assert too_big.returncode == 4
    assert "advertisement beacon was not changed" in too_big.stderr and "bytes" in too_big.stderr, too_big.stderr
    typo = ctl("advertise", "set", "beacon", '{"manufacturerDat": {}, "type": "peripheral"}')
    assert typo.returncode == 4
    assert 'manufacturerDat: unknown key (did you mean "manufacturerData"?)' in typo.stderr, typo.stderr
    assert "type: cannot be changed at run time" in typo.stderr, typo.stderr
    bad_hex = ctl("advertise", "set", "beacon", '{"manufacturerData": {"0xFFFF": {"hex": "abc"}}}')
    assert bad_hex.returncode == 4 and "manufacturerData.0xFFFF.hex: odd number of hex digits" in bad_hex.stderr, bad_hex.stderr
    assert ctl("advertise", "set", "nope", "{}").returncode == 3
    advert = props(standin, BEACON)
    assert {int(k): bytes(v) for k, v in advert["properties"]["ManufacturerData"].items()} == {0xFFFF: b"\x01"}
    assert int(advert["updates"]) == 0


def test_persist_keeps_the_change_across_a_restart(start_gattd, standin, ctl, tmp_path):
    state = str(tmp_path / "kept")
    g = start(start_gattd, standin, state_dir=state)
    assert ctl("advertise", "set", "main", '{"localName": "kept"}', "--persist").returncode == 0
    assert ctl("advertise", "set", "beacon", '{"manufacturerData": {"0xFFFF": {"hex": "99"}}}').returncode == 0
    g.stop()
    g2 = start(start_gattd, standin, state_dir=state)
    assert g2.child.wait_for_line("advertising data restored", 5)
    assert str(props(standin, MAIN)["properties"]["LocalName"]) == "kept", "persisted"
    beacon = props(standin, BEACON)["properties"]["ManufacturerData"]
    assert {int(k): bytes(v) for k, v in beacon.items()} == {0xFFFF: b"\x01"}, "not persisted: the definition's"
