# SPDX-License-Identifier: MIT
"""Programs as the peripheral's brain: handlers answer reads and decide writes.

gattd serves configs/handlers.json (or examples/handler.json) to the stand-in bluetoothd;
a handler program on the private bus registers with org.gattd.Manager1.RegisterHandler.
Every wait is on an event (a line a program prints, a stand-in reply) with a deadline.
"""

import os
import signal
import struct
import subprocess
import sys

import dbus
import pytest

from conftest import REPO
from harness import DEVICE, DEVICE2, Child, one_by_uuid

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "handler_program.py")
EXAMPLE = os.path.join(REPO, "examples", "handler.py")
MTU = dbus.UInt16(23)
SLOW = "12345678-1234-5678-1234-56789abc9001"
STRICT = "12345678-1234-5678-1234-56789abc9002"
PLAIN = "12345678-1234-5678-1234-56789abc9003"


@pytest.fixture
def gattd(start_gattd, standin):
    def start(config="handlers.json"):
        g = start_gattd(config)
        standin.call("WaitForApplication", dbus.UInt32(10000))
        assert g.child.wait_for_line("control API ready", 10), "gattd did not take org.gattd"
        return g
    return start


@pytest.fixture
def program(private_bus, tmp_path):
    started = []

    def start(*args, script=PROGRAM):
        child = Child(["/usr/bin/python3", script] + list(args),
                      env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address},
                      log=open(str(tmp_path / "handler.log"), "a"))
        started.append(child)
        return child
    yield start
    for child in started:
        child.stop()


def path(standin, uuid):
    return one_by_uuid(standin.call("Attributes"), uuid)["path"]


def read_att(standin, uuid, device=DEVICE, offset=0):
    code, value = standin.call("ReadAtt", path(standin, uuid), dbus.UInt16(offset), MTU, device)
    return int(code), bytes(value)


def write_att(standin, uuid, value, device=DEVICE):
    return int(standin.call("WriteAtt", path(standin, uuid), dbus.ByteArray(value), dbus.UInt16(0), MTU, device,
                            False))


def background_read(private_bus, standin, uuid):
    """A ReadAtt in another process, so the test can do other things while it waits."""
    code = ("import sys, dbus; sys.path.insert(0, %r); import harness\n"
            "c = dbus.bus.BusConnection(%r)\n"
            "s = dbus.Interface(c.get_object(harness.CONTROL_NAME, harness.CONTROL_PATH), harness.CONTROL_IFACE)\n"
            "r = s.ReadAtt(%r, dbus.UInt16(0), dbus.UInt16(23), harness.DEVICE, timeout=60)\n"
            "print(int(r[0]), bytes(r[1]).hex(), flush=True)\n") % (
        os.path.join(REPO, "Tests", "standin"), private_bus.address, str(path(standin, uuid)))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_example_answers_each_read_with_a_fresh_reading_and_decides_writes(gattd, standin, program, tmp_path):
    gattd(os.path.join(REPO, "examples", "handler.json"))
    sensor = tmp_path / "temp"
    sensor.write_text("21500\n")
    handler = program("--sensor-file", str(sensor), script=EXAMPLE)
    assert handler.wait_for_line("handler registered", 10)
    assert read_att(standin, "2a6e") == (0, struct.pack("<h", 2150))
    sensor.write_text("22340\n")
    assert read_att(standin, "2a6e") == (0, struct.pack("<h", 2234)), "a fresh reading, not a stored one"
    setpoint = "12345678-1234-5678-1234-56789abc8002"
    # A phone that bonded over a private address: its object keeps the path of that address,
    # the handler hears the identity bluetoothd gives it now.
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    standin.call("SetDeviceIdentity", DEVICE, "00:AA:01:01:00:01", "public", True)
    assert write_att(standin, setpoint, struct.pack("<h", 2500)) == 0
    assert handler.wait_for_line("setpoint 25.00 C from 00:AA:01:01:00:01", 5), \
        "the central by the identity bluetoothd gives it, not by its object path"
    assert read_att(standin, setpoint) == (0, struct.pack("<h", 2500)), \
        "the program took only setpoint's writes: its reads are gattd's stored value"
    assert write_att(standin, setpoint, struct.pack("<h", 5000)) == 0x80, "handler.json's accept rule: 0x80"
    manager = dbus.Interface(standin.bus.connect().get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    assert bytes(manager.GetValue("setpoint")) == struct.pack("<h", 2500), "accepted stored, refused not"
    handler.stop()
    assert write_att(standin, setpoint, struct.pack("<h", 2600)) == 0x81, \
        "the program is not running: handler.json's fallback 0x81, not the refusal's 0x80"
    assert read_att(standin, setpoint) == (0x81, b""), "fail closed: nobody serves setpoint"


def test_example_registers_again_when_gattd_comes_back(gattd, standin, program, tmp_path):
    config = os.path.join(REPO, "examples", "handler.json")
    first = gattd(config)
    sensor = tmp_path / "temp"
    sensor.write_text("21500\n")
    handler = program("--sensor-file", str(sensor), script=EXAMPLE)
    assert handler.wait_for_line("handler registered", 10)
    first.stop()
    assert handler.wait_for_line("gattd is gone; waiting for it to come back", 10)
    gattd(config)
    assert handler.wait_for_line("handler registered again", 10), "registered with the new gattd"
    sensor.write_text("23000\n")
    assert read_att(standin, "2a6e") == (0, struct.pack("<h", 2300)), "the program serves reads again"
    setpoint = "12345678-1234-5678-1234-56789abc8002"
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)  # a central bluetoothd names
    assert write_att(standin, setpoint, struct.pack("<h", 1800)) == 0
    assert handler.wait_for_line("setpoint 18.00 C from 00:11:22:33:44:55", 5), "and decides writes again"


def test_example_waits_for_gattd_at_start(gattd, standin, program):
    handler = program(script=EXAMPLE)
    gattd(os.path.join(REPO, "examples", "handler.json"))
    assert handler.wait_for_line("handler registered", 10), "started before gattd, registered once it came"
    assert handler.proc.poll() is None


def test_example_long_read_is_one_consistent_report(gattd, standin, program):
    gattd(os.path.join(REPO, "examples", "handler.json"))
    handler = program(script=EXAMPLE)
    assert handler.wait_for_line("handler registered", 10)
    report = "12345678-1234-5678-1234-56789abc8003"
    first = standin.call("LongRead", path(standin, report), MTU, DEVICE)
    second = standin.call("LongRead", path(standin, report), MTU, DEVICE)
    assert int(first[0]) == 0 and int(second[0]) == 0
    first, second = bytes(first[1]).decode(), bytes(second[1]).decode()
    assert len(first) == 200 and first.startswith("report 1:") and "report 2" not in first, first
    assert second.startswith("report 2:") and "report 1" not in second, "each long read is one report"


def test_application_error_and_unknown_error_names(gattd, standin, program):
    gattd()
    handler = program("--ids", "slow,strict", "--refuse", "strict=Application0x81",
                      "--error-name", "slow=com.example.Oops")
    assert handler.wait_for_line("registered", 10)
    assert write_att(standin, STRICT, b"\x05") == 0x81
    assert read_att(standin, STRICT) == (0x81, b"")
    assert read_att(standin, SLOW) == (0x0E, b""), "an error name gattd does not know is 0x0E"
    assert write_att(standin, STRICT, b"\x05\x06") == 0x0D, "validated before the handler is asked"
    assert not handler.wait_for_line("write strict 0506", 0.5)


def manager(standin):
    return dbus.Interface(standin.bus.connect().get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")


def test_no_handler_registered_fallback_error_refuses_from_the_first_request(gattd, standin):
    """Fail closed (docs/fail-closed.md): no program has registered yet, so nobody decided."""
    g = gattd()
    assert read_att(standin, STRICT) == (0x81, b""), "not the stored value"
    assert write_att(standin, STRICT, b"\x05") == 0x81, "a write nobody decided is refused"
    assert bytes(manager(standin).GetValue("strict")) == b"\x01", "and not stored"
    line = g.child.wait_for_line("refused: no handler is registered; using the fallback", 5)
    assert line and "strict" in line, line
    assert read_att(standin, SLOW) == (0, b"stored"), "fallback 'value': the stored value"
    assert write_att(standin, SLOW, b"no handler") == 0
    manager(standin).SetValue("strict", dbus.ByteArray(b"\x02"))
    assert bytes(manager(standin).GetValue("strict")) == b"\x02", "SetValue is the program's own, not refused"


def test_an_answer_of_the_wrong_type_is_refused_not_served(gattd, standin, program):
    g = gattd()
    handler = program("--ids", "slow,strict", "--wrong-type", "slow", "--wrong-type", "strict")
    assert handler.wait_for_line("registered", 10)
    assert read_att(standin, SLOW) == (0x0E, b""), "fallback 'value' does not cover a wrong answer"
    assert g.child.wait_for_line("refused: the handler's answer is malformed", 5)
    assert read_att(standin, STRICT) == (0x81, b""), "the fallback's error where one is set"
    assert write_att(standin, SLOW, b"true?") == 0x0E, "a boolean is not an acceptance"
    assert write_att(standin, STRICT, b"\x07") == 0x81
    assert bytes(manager(standin).GetValue("slow")) == b"stored"
    assert bytes(manager(standin).GetValue("strict")) == b"\x01"


def test_a_stuck_handler_gets_the_fallback_while_other_reads_are_served(gattd, standin, program, private_bus):
    g = gattd()
    handler = program("--ids", "slow", "--sleep-read", "slow=10")
    assert handler.wait_for_line("registered", 10)
    slow = background_read(private_bus, standin, SLOW)
    assert handler.wait_for_line("read slow", 10), "the read reached the handler"
    assert read_att(standin, PLAIN) == (0, b"plain"), "gattd's loop does not wait for the handler"
    assert slow.poll() is None, "the stuck read is still pending (deadline 3 s)"
    out, _ = slow.communicate(timeout=30)
    assert out.split() == ["0", b"stored".hex()], "the deadline passed: the stored value (fallback 'value')"
    assert g.child.wait_for_line("handler did not answer; using the fallback", 5)


def test_a_handler_killed_mid_request_falls_back_and_loses_its_claims(gattd, standin, program, private_bus):
    g = gattd()
    handler = program("--ids", "slow,strict", "--sleep-read", "strict=60")
    assert handler.wait_for_line("registered", 10)
    pending = background_read(private_bus, standin, STRICT)
    assert handler.wait_for_line("read strict", 10)
    handler.proc.send_signal(signal.SIGKILL)
    out, _ = pending.communicate(timeout=30)
    assert out.split() == ["129", ""] or out.split() == ["129"], "fallback 'error' 0x81: %r" % out
    assert g.child.wait_for_line("handler gone; its attributes fall back to their definitions", 10)
    assert read_att(standin, SLOW) == (0, b"stored"), "no claim left: served from the database"
    assert read_att(standin, STRICT) == (0x81, b""), "no claim left, fallback 'error': refused"
    again = program("--ids", "slow", "--answer", "slow=" + b"new owner".hex())
    assert again.wait_for_line("registered", 10), "the ids are free again"
    assert read_att(standin, SLOW) == (0, b"new owner")


def test_second_claimant_refused_and_unregister_frees(gattd, standin, program, private_bus):
    gattd()
    first = program("--ids", "slow", "--answer", "slow=" + b"first".hex())
    assert first.wait_for_line("registered", 10)
    second = program("--ids", "plain,slow")
    line = second.wait_for_line("refused", 10)
    assert line and "org.gattd.Error.AlreadyClaimed" in line and "slow is already served by the handler" in line
    assert second.proc.wait(10) == 3
    assert read_att(standin, PLAIN) == (0, b"plain"), "all or nothing: plain was not claimed either"
    third = program("--ids", "nope")
    line = third.wait_for_line("refused", 10)
    assert line and "org.gattd.Error.UnknownCharacteristic" in line
    assert read_att(standin, SLOW) == (0, b"first")


def test_writes_through_a_handler_are_stored_saved_and_notified(gattd, standin, program):
    gattd()
    handler = program("--ids", "slow")
    assert handler.wait_for_line("registered", 10)
    slow = path(standin, SLOW)
    assert write_att(standin, SLOW, b"accepted") == 0
    assert handler.wait_for_line("write slow %s reply=True" % b"accepted".hex(), 5)
    manager = dbus.Interface(standin.bus.connect().get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    assert bytes(manager.GetValue("slow")) == b"accepted", "stored like any accepted write"
    standin.call("Subscribe", slow, DEVICE2)
    assert write_att(standin, SLOW, b"again", device=DEVICE) == 0
    values = standin.call("WaitForNotifications", slow, dbus.UInt32(1), dbus.UInt32(5000))
    assert bytes(values[-1]) == b"again", "and notified like any accepted write"


def test_example_streams_every_sample_in_order(gattd, standin, program):
    gattd(os.path.join(REPO, "examples", "handler.json"))
    samples = path(standin, "12345678-1234-5678-1234-56789abc8004")
    standin.call("Subscribe", samples, DEVICE)
    handler = program("--stream-hz", "1000", "--samples", "300", script=EXAMPLE)
    assert handler.wait_for_line("handler registered", 10)
    assert handler.wait_for_line("streamed 300 samples", 30), "\n".join(handler.out.lines[-5:])
    values = standin.call("WaitForNotifications", samples, dbus.UInt32(300), dbus.UInt32(30000), timeout=40)
    assert [struct.unpack("<Ih", bytes(v))[0] for v in values] == list(range(300)), "no sample lost or reordered"
