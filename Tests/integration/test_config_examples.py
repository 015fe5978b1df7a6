# SPDX-License-Identifier: MIT
"""config/examples/ end to end against the stand-in bluetoothd.

Wi-Fi provisioning runs the example file unchanged, with a stand-in `nmcli`
(standin-bin/nmcli) first on gattd's PATH. The environmental sensor runs the example with
its sysfs paths pointed at files of the test's own (the only change)."""

import json
import os
import struct
import time

import dbus
import pytest

from conftest import REPO, gattctl_binary
from harness import DEVICE, one_by_uuid

EXAMPLES = os.path.join(REPO, "config", "examples")
STANDIN_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standin-bin")
MTU = dbus.UInt16(185)
WAIT_MS = dbus.UInt32(10000)
SECURITY_LOW, SECURITY_MEDIUM = 1, 2
ATT_INSUFFICIENT_ENCRYPTION = 0x0F


def wait_until(condition, what, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def wifi_uuid(n):
    return "3f1e%04x-6c1d-4a3e-9a5e-1f2b7c3d4e50" % n


def test_wifi_provisioning_applies_credentials_through_nmcli(start_gattd, standin, tmp_path):
    state = tmp_path / "nmcli"
    state.mkdir()
    (state / "networks").write_text("HomeNet\tsecret123\nCafe: Free\topen sesame\n")
    calls = state / "calls"
    env = {"PATH": STANDIN_BIN + ":" + os.environ["PATH"], "NMCLI_STANDIN_STATE": str(state)}
    g = start_gattd(os.path.join(EXAMPLES, "wifi-provisioning", "wifi-provisioning.json"), env=env)
    standin.call("WaitForApplication", WAIT_MS)
    attributes = standin.call("Attributes")
    networks, credentials, status = (one_by_uuid(attributes, wifi_uuid(n))["path"] for n in (2, 3, 4))

    def read(path):
        return bytes(standin.call("Read", path, dbus.UInt16(0), MTU, DEVICE))

    def write(value):
        return int(standin.call("WriteAtt", credentials, dbus.ByteArray(value), dbus.UInt16(0), MTU, DEVICE, False))

    def connect_calls():
        text = calls.read_text() if calls.exists() else ""
        return [c.split("\n") for c in text.split("\n\n") if c.startswith("--wait")]

    # The network list, unescaped (nmcli -t writes "Cafe\: Free"), one SSID per line.
    assert wait_until(lambda: read(networks) == b"HomeNet\nCafe: Free", "the network list")
    standin.call("Subscribe", status, DEVICE)
    assert wait_until(lambda: read(status) == b"disconnected", "the first status")

    # bluetoothd refuses the write on an unencrypted link; nmcli never runs.
    standin.call("SetSecurity", dbus.Byte(SECURITY_LOW))
    assert write(b"HomeNet\nsecret123") == ATT_INSUFFICIENT_ENCRYPTION
    assert connect_calls() == []

    standin.call("SetSecurity", dbus.Byte(SECURITY_MEDIUM))
    # A wrong passphrase: nmcli fails, the hook answers ATT error 0x80, still disconnected.
    assert write(b"HomeNet\nwrong") == 0x80
    assert connect_calls() == [["--wait", "20", "device", "wifi", "connect", "HomeNet", "password", "wrong"]]
    # Not "SSID newline passphrase": refused with 0x81 before nmcli is asked.
    assert write(b"HomeNet") == 0x81
    assert len(connect_calls()) == 1

    # The right one, with a ':' and a space in the SSID: applied, and the status notified.
    assert write(b"Cafe: Free\nopen sesame") == 0
    assert connect_calls()[-1] == ["--wait", "20", "device", "wifi", "connect", "Cafe: Free", "password",
                                   "open sesame"]
    values = wait_until(lambda: [bytes(v) for v in standin.call("Notifications", status)
                                 if bytes(v) == b"connected Cafe: Free"], "the status notification")
    assert values
    assert read(status) == b"connected Cafe: Free"
    # The passphrase is neither readable nor in gattd's log.
    assert standin.call("ReadAtt", credentials, dbus.UInt16(0), MTU, DEVICE)[0] != 0
    assert g.alive()
    with open(g.log.name) as log:
        assert "open sesame" not in log.read()


def test_environmental_sensor_serves_iio_readings(start_gattd, standin, tmp_path):
    with open(os.path.join(EXAMPLES, "environmental-sensor", "environmental-sensor.json")) as f:
        config = json.load(f)
    iio = tmp_path / "iio:device0"
    iio.mkdir()
    for characteristic in config["services"][0]["characteristics"]:
        source = characteristic["update"]["source"]["file"]
        source["path"] = str(iio / os.path.basename(source["path"]))
    path = tmp_path / "environmental-sensor.json"
    path.write_text(json.dumps(config))
    # What a BME280 reports through iio: millidegrees, milli-percent, kPa.
    (iio / "in_temp_input").write_text("21370\n")
    (iio / "in_humidityrelative_input").write_text("45123\n")
    (iio / "in_pressure_input").write_text("101.325000000\n")

    start_gattd(str(path))
    standin.call("WaitForApplication", WAIT_MS)
    attributes = standin.call("Attributes")
    temperature, humidity, pressure = (one_by_uuid(attributes, u)["path"] for u in ("2a6e", "2a6f", "2a6d"))

    def read(path):
        return bytes(standin.call("Read", path, dbus.UInt16(0), MTU, DEVICE))

    # 0.01 degC, 0.01 %, 0.1 Pa, little-endian (GATT Specification Supplement).
    assert wait_until(lambda: read(temperature) == struct.pack("<h", 2137), "the temperature")
    assert wait_until(lambda: read(humidity) == struct.pack("<H", 4512), "the humidity")
    assert wait_until(lambda: read(pressure) == struct.pack("<I", 1013250), "the pressure")


NUS = "6e40%04x-b5a3-f393-e0a9-e50e24dcca9e"


def test_uart_bridge_carries_writes_to_a_program_and_its_output_back(start_gattd, standin, private_bus):
    from harness import Child
    start_gattd(os.path.join(EXAMPLES, "uart-bridge", "uart-bridge.json"))
    standin.call("WaitForApplication", WAIT_MS)
    attributes = standin.call("Attributes")
    rx, tx = (one_by_uuid(attributes, NUS % n)["path"] for n in (2, 3))
    standin.call("Subscribe", tx, DEVICE)
    program = ["/bin/sh", "-c", 'while IFS= read -r line; do printf "got: %s\\n" "$line"; done']
    bridge = Child([os.path.join(EXAMPLES, "uart-bridge", "nus-bridge"), "--"] + program,
                   env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address,
                              "GATTCTL": gattctl_binary()})
    try:
        assert bridge.wait_for_line("nus-bridge: uart-rx <-> uart-tx", 10)
        standin.call("Write", rx, dbus.ByteArray(b"hello\n"), dbus.UInt16(0), MTU, DEVICE, False)
        # 56 bytes of output: notified as 20 + 20 + 16, in order.
        standin.call("Write", rx, dbus.ByteArray(b"x" * 50 + b"\n"), dbus.UInt16(0), MTU, DEVICE, False)
        expected = b"got: hello\n" + b"got: " + b"x" * 50 + b"\n"

        def received():
            values = [bytes(v) for v in standin.call("Notifications", tx)]
            return values if sum(map(len, values)) >= len(expected) else None
        values = wait_until(received, "the program's output as notifications")
        assert b"".join(values) == expected
        assert max(map(len, values)) <= 20
    finally:
        bridge.stop()


@pytest.mark.timing
def test_uart_bridge_resends_what_a_full_queue_refused(start_gattd, standin, private_bus, tmp_path):
    """TX's queue made short (1) and its pacing slow (2 s): the program's 80 bytes are 4
    pieces, set faster than they leave, so gattd refuses some with QueueFull; the bridge
    sends each again after ReadyToUpdate and the central gets every byte, in order.
    The queue fills when a piece is set within the pacing of the one before the queued one:
    with 100 ms and a queue of 2 that needed three `gattctl set`s within 100 ms, which a
    loaded machine missed (CI: "no piece was refused"); 2 s leaves any native gattctl room."""
    from harness import Child
    with open(os.path.join(EXAMPLES, "uart-bridge", "uart-bridge.json")) as f:
        config = json.load(f)
    tx_definition = config["services"][0]["characteristics"][1]
    tx_definition.update({"queueLength": 1, "notifyIntervalMs": 2000})
    path = tmp_path / "uart-bridge.json"
    path.write_text(json.dumps(config))
    start_gattd(str(path))
    standin.call("WaitForApplication", WAIT_MS)
    attributes = standin.call("Attributes")
    rx, tx = (one_by_uuid(attributes, NUS % n)["path"] for n in (2, 3))
    standin.call("Subscribe", tx, DEVICE)
    expected = bytes(range(48, 58)) * 8  # 80 bytes, "0123456789" x 8: four 20-byte pieces
    program = ["/bin/sh", "-c", "read -r line; printf '%s' \"$1\"", "sh", expected.decode()]
    bridge = Child([os.path.join(EXAMPLES, "uart-bridge", "nus-bridge"), "--"] + program,
                   env_extra={"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address,
                              "GATTCTL": gattctl_binary()})
    try:
        assert bridge.wait_for_line("nus-bridge: uart-rx <-> uart-tx", 10)
        standin.call("Write", rx, dbus.ByteArray(b"go\n"), dbus.UInt16(0), MTU, DEVICE, False)

        def received():
            values = [bytes(v) for v in standin.call("Notifications", tx)]
            return values if sum(map(len, values)) >= len(expected) else None
        values = wait_until(received, "80 bytes of notifications", timeout=60)
        assert b"".join(values) == expected
        assert bridge.wait_for_line("queue full", 1), "no piece was refused: the test did not fill the queue"
        assert bridge.proc.wait(10) == 0, "the bridge exits with the program's status"
    finally:
        bridge.stop()


def wifi_program(start_gattd, standin, private_bus, tmp_path, *options, env=None):
    """gattd serving wifi-provisioning-program.json and wifi-provisioning.py deciding its
    writes; returns (program, credentials path, status path)."""
    from harness import Child
    start_gattd(os.path.join(EXAMPLES, "wifi-provisioning", "wifi-provisioning-program.json"))
    standin.call("WaitForApplication", WAIT_MS)
    program = Child(["/usr/bin/python3", os.path.join(EXAMPLES, "wifi-provisioning", "wifi-provisioning.py"),
                     *options], env_extra=dict(env or {}, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address),
                    log=open(str(tmp_path / "program.log"), "a"))
    assert program.wait_for_line("wifi-provisioning: serving", 10)
    attributes = standin.call("Attributes")
    credentials, status = (one_by_uuid(attributes, wifi_uuid(n))["path"] for n in (3, 4))
    standin.call("SetSecurity", dbus.Byte(SECURITY_MEDIUM))
    return program, credentials, status


def wifi_write(standin, credentials, value):
    return int(standin.call("WriteAtt", credentials, dbus.ByteArray(value), dbus.UInt16(0), MTU, DEVICE, False))


def test_wifi_program_writes_a_wpa_supplicant_file(start_gattd, standin, private_bus, tmp_path):
    directory = tmp_path / "wpa"
    directory.mkdir()
    program, credentials, status = wifi_program(start_gattd, standin, private_bus, tmp_path,
                                                "--wpa-dir", str(directory), "--interface", "wlan1")
    try:
        read = lambda: bytes(standin.call("Read", status, dbus.UInt16(0), MTU, DEVICE))  # noqa: E731
        assert read() == b"not configured", "answered by the program"
        standin.call("Subscribe", status, DEVICE)
        assert wifi_write(standin, credentials, b"HomeNet") == 0x81, "no newline"
        assert wifi_write(standin, credentials, b"HomeNet\nshort") == 0x81, "WPA passphrases have 8 to 63"
        assert wifi_write(standin, credentials, b"\xff\xfe\nsecret123") == 0x81, "not UTF-8"
        assert os.listdir(str(directory)) == [], "nothing written for a refused value"
        assert wifi_write(standin, credentials, b"Cafe: Free\nopen sesame") == 0
        written = directory / "wpa_supplicant-wlan1.conf"
        text = written.read_text()
        assert "ssid=%s\n" % b"Cafe: Free".hex() in text
        # wpa_passphrase's PSK: PBKDF2-HMAC-SHA1(passphrase, SSID, 4096, 32), never the passphrase.
        import hashlib
        assert "psk=%s\n" % hashlib.pbkdf2_hmac("sha1", b"open sesame", b"Cafe: Free", 4096, 32).hex() in text
        assert "open sesame" not in text and oct(written.stat().st_mode & 0o777) == "0o600"
        assert read() == b"configured Cafe: Free"
        wait_until(lambda: b"configured Cafe: Free" in [bytes(v) for v in standin.call("Notifications", status)],
                   "the status notification")
        # The directory replaced by a file: the write cannot be saved, 0x80, the old file kept.
        directory.rename(tmp_path / "wpa-old")
        directory.write_text("")
        assert wifi_write(standin, credentials, b"Other\npassword9") == 0x80
        assert program.wait_for_line("wifi: cannot write %s" % written, 5)
        assert (tmp_path / "wpa-old" / "wpa_supplicant-wlan1.conf").read_text() == text
        printed = "\n".join(program.out.lines)
        assert "Cafe: Free applied for" in printed
        assert "open sesame" not in printed and "password9" not in printed, "the passphrase is never printed"
    finally:
        program.stop()


def test_wifi_program_applies_through_nmcli(start_gattd, standin, private_bus, tmp_path):
    state = tmp_path / "nmcli"
    state.mkdir()
    (state / "networks").write_text("HomeNet\tsecret123\nCafe: Free\topen sesame\n")
    env = {"PATH": STANDIN_BIN + ":" + os.environ["PATH"], "NMCLI_STANDIN_STATE": str(state)}
    program, credentials, status = wifi_program(start_gattd, standin, private_bus, tmp_path, env=env)
    try:
        read = lambda: bytes(standin.call("Read", status, dbus.UInt16(0), MTU, DEVICE))  # noqa: E731
        assert read() == b"disconnected"
        assert wifi_write(standin, credentials, b"HomeNet\nwrong pass") == 0x80, "nmcli refused it"
        assert program.wait_for_line("HomeNet from %s: nmcli failed: Error: Connection activation failed" % DEVICE, 5)
        assert wifi_write(standin, credentials, b"Cafe: Free\nopen sesame") == 0
        calls = [c.split("\n") for c in (state / "calls").read_text().split("\n\n") if c.startswith("--wait")]
        assert calls == [["--wait", "8", "device", "wifi", "connect", "HomeNet", "password", "wrong pass"],
                         ["--wait", "8", "device", "wifi", "connect", "Cafe: Free", "password", "open sesame"]]
        assert read() == b"connected Cafe: Free"
    finally:
        program.stop()


def test_wifi_program_gone_refuses_credentials(start_gattd, standin, private_bus, tmp_path):
    """Fail closed: with the program stopped, nobody decides the write; gattd refuses it."""
    directory = tmp_path / "wpa"
    directory.mkdir()
    program, credentials, _ = wifi_program(start_gattd, standin, private_bus, tmp_path, "--wpa-dir", str(directory))
    program.stop()
    assert wifi_write(standin, credentials, b"HomeNet\nsecret123") == 0x80
    assert os.listdir(str(directory)) == []
