# SPDX-License-Identifier: MIT
"""accept: the values a central may write, said in the definition (config/README.md,
"Accept rules"). A real gattd serves to the stand-in bluetoothd; the stand-in's central
writes through WriteAtt and gets the ATT result bluetoothd would send."""

import json
import struct

import dbus
import pytest

from conftest import REPO, run_gattctl
from fixtures import path_of
from harness import DEVICE

MTU = dbus.UInt16(23)
SETPOINT = "12345678-1234-5678-1234-56789abc6401"
MODE = "12345678-1234-5678-1234-56789abc6402"
GATED = "12345678-1234-5678-1234-56789abc6403"


@pytest.fixture
def accept_config(tmp_path):
    hook_ran = tmp_path / "hook-ran"
    config = {
        "version": 1,
        "services": [{"id": "rules", "uuid": "12345678-1234-5678-1234-56789abc6400", "characteristics": [
            {"id": "setpoint", "uuid": SETPOINT, "flags": ["read", "write"], "value": {"int16": 2100},
             "minLength": 2, "maxLength": 2, "persist": False, "accept": {"min": 1000, "max": 3000}},
            {"id": "mode", "uuid": MODE, "flags": ["read", "write"], "value": {"uint8": 0},
             "minLength": 1, "maxLength": 1, "persist": False, "accept": {"oneOf": [0, 1, 2], "error": "0x9f"}},
            # A deciding hook that accepts everything and leaves a mark: it must not run for a
            # value the rule refuses.
            {"id": "gated", "uuid": GATED, "flags": ["read", "write"], "value": {"uint8": 5},
             "minLength": 1, "maxLength": 1, "persist": False, "accept": {"max": 10},
             "onWrite": {"argv": ["/bin/sh", "-c", "echo \"$GATT_VALUE_HEX\" >> \"$1\"", "sh", str(hook_ran)],
                         "decides": True, "timeoutMs": 5000}},
        ]}],
        "advertisements": [{"id": "main", "serviceUUIDs": ["12345678-1234-5678-1234-56789abc6400"]}],
    }
    path = tmp_path / "accept.json"
    path.write_text(json.dumps(config))
    return str(path), hook_ran


def start(start_gattd, standin, config):
    g = start_gattd(config)
    standin.call("WaitForApplication", dbus.UInt32(10000))
    return g


def write_att(standin, uuid, value):
    return int(standin.call("WriteAtt", path_of(standin, uuid), dbus.ByteArray(value), dbus.UInt16(0), MTU, DEVICE,
                            False))


def read(standin, uuid):
    return bytes(standin.call("Read", path_of(standin, uuid), dbus.UInt16(0), MTU, DEVICE))


def test_out_of_range_write_gets_the_att_error_and_the_value_stays(start_gattd, standin, accept_config):
    config, _ = accept_config
    g = start(start_gattd, standin, config)
    assert write_att(standin, SETPOINT, struct.pack("<h", 999)) == 0x80, "the default error, 0x80"
    assert write_att(standin, SETPOINT, struct.pack("<h", -2500)) == 0x80, "signed: -25.00, not 63036"
    assert read(standin, SETPOINT) == struct.pack("<h", 2100), "the refused value was not stored"
    line = g.child.wait_for_line("write refused by the definition's accept rule", 5)
    assert line and "setpoint" in line and "999" in line, line
    assert write_att(standin, SETPOINT, struct.pack("<h", 2500)) == 0, "in range: accepted"
    assert read(standin, SETPOINT) == struct.pack("<h", 2500)
    assert write_att(standin, SETPOINT, b"\x01") == 0x0D, "not one int16: the length's error"
    assert write_att(standin, MODE, b"\x03") == 0x9F, "the rule's own error"
    assert write_att(standin, MODE, b"\x02") == 0
    assert read(standin, MODE) == b"\x02"


def test_the_rule_comes_before_a_deciding_hook(start_gattd, standin, accept_config):
    config, hook_ran = accept_config
    start(start_gattd, standin, config)
    assert write_att(standin, GATED, b"\x0b") == 0x80
    assert not hook_ran.exists(), "the hook was not asked about a value the rule refused"
    assert write_att(standin, GATED, b"\x07") == 0, "the hook decides what the rule accepts"
    assert hook_ran.read_text() == "07\n", "the hook ran once, for the accepted value"
    assert read(standin, GATED) == b"\x07"


def test_a_program_setting_a_value_is_trusted(start_gattd, standin, private_bus, accept_config):
    """gattctl set (SetValue) is a program on the board, like a handler: the rule is for centrals."""
    config, _ = accept_config
    start(start_gattd, standin, config)
    result = run_gattctl(private_bus, "set", "setpoint", "--int16", "4000")
    assert result.returncode == 0, result.stderr
    assert read(standin, SETPOINT) == struct.pack("<h", 4000)


def test_example_handler_json_refuses_out_of_range_and_tells_a_missing_program_apart(start_gattd, standin):
    """examples/handler.json without its program: 0x80 is "value refused" (the accept rule,
    no program needed), 0x81 "the program is not running" (the handler's fallback)."""
    start(start_gattd, standin, REPO + "/examples/handler.json")
    setpoint = "12345678-1234-5678-1234-56789abc8002"
    assert write_att(standin, setpoint, struct.pack("<h", 5000)) == 0x80
    assert write_att(standin, setpoint, struct.pack("<h", 2500)) == 0x81
