# SPDX-License-Identifier: MIT
"""`gattd --doctor` and the known-problem table against the stand-in.

The stand-in plays a bluetoothd release (`Standin(emulate=...)`, Tests/standin/emulation.py):
its version is what the program in its argv[0] answers to `--version`, its properties and
refusals those of that release in the known-bad case. The kernel release is forced with
GATTD_KERNEL_RELEASE, main.conf with --main-conf. Each test waits on events (a log line,
the stand-in's registrations), never on time.
"""

import json
import os
import subprocess

import dbus
import pytest

from conftest import gattd_binary
from harness import Standin

WAIT_MS = dbus.UInt32(10000)
HEALTHY_KERNEL = "6.1.0-28-amd64"
MAIN_CONF = """# bluetoothd's main.conf as a board ships it
[General]
#Privacy = off
JustWorksRepairing = always
Experimental = true

[GATT]
KeySize = 16
"""


@pytest.fixture
def emulated(private_bus, tmp_path, request):
    """emulated(name) -> a running stand-in playing that bluetoothd."""
    started = []

    def start(name):
        sd = Standin(private_bus, log_path=str(tmp_path / "standin.log"), emulate=name)
        started.append(sd)
        return sd
    yield start
    for sd in started:
        sd.stop()


@pytest.fixture
def doctor(private_bus, tmp_path):
    """doctor(kernel, *args, main_conf=text or None) -> (exit status, stdout)."""
    binary = gattd_binary()

    def run(kernel, *args, main_conf=MAIN_CONF):
        path = str(tmp_path / "main.conf")
        if main_conf is not None:
            with open(path, "w") as f:
                f.write(main_conf)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address, GATTD_KERNEL_RELEASE=kernel)
        result = subprocess.run([binary, "--doctor", "--main-conf", path] + list(args),
                                capture_output=True, text=True, env=env, timeout=60)
        assert result.stderr == "", result.stderr
        return result.returncode, result.stdout
    return run


def doctor_json(doctor, kernel, **kwargs):
    status, out = doctor(kernel, "--json", **kwargs)
    report = json.loads(out)
    assert report["problem"] == (status == 1), (status, out)
    return status, report


def findings(report):
    return {f["id"]: f for f in report["findings"]}


def gattd_status(private_bus):
    bus = private_bus.connect()
    manager = dbus.Interface(bus.get_object("org.gattd", "/org/gattd", introspect=False), "org.gattd.Manager1")
    return manager.GetStatus(timeout=10)


def wait_advertising(g, count):
    seen = [0]

    def predicate(line):
        if "advertisement registered" in line:
            seen[0] += 1
        return seen[0] >= count
    assert g.child.out.wait_for(predicate, 10), "gattd did not register %d advertisements" % count


def test_a_healthy_board_finds_nothing(emulated, start_gattd, doctor, private_bus):
    sd = emulated("healthy-5.82")
    g = start_gattd("control.json", env={"GATTD_KERNEL_RELEASE": HEALTHY_KERNEL})
    sd.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    wait_advertising(g, 2)

    status, report = doctor_json(doctor, HEALTHY_KERNEL)
    assert status == 0, report["findings"]
    assert report["findings"] == []
    assert report["bluetoothd"]["version"] == "5.82"
    assert report["bluetoothd"]["running"] is True
    # Found through the fallback: /proc/PID/exe is the interpreter, argv[0] the program.
    assert "bluetoothd --version" in report["bluetoothd"]["versionSource"]
    assert "not a BlueZ version" in report["bluetoothd"]["versionSource"]
    assert report["kernel"] == HEALTHY_KERNEL
    [adapter] = report["adapters"]
    assert adapter["name"] == "hci0" and adapter["powered"] is True and adapter["pairable"] is False
    adv = adapter["advertising"]
    assert adv["activeInstances"] == 2 and adv["supportedInstances"] == 3
    assert adv["gattdInstances"] == 2 and adv["otherInstances"] == 0
    assert adv["supportedCapabilities"] == {"MaxAdvLen": 251, "MaxScnRspLen": 251, "MaxTxPower": 10,
                                            "MinTxPower": -34}
    assert adv["supportedFeatures"] == ["CanSetTxPower", "HardwareOffload"]
    assert adv["supportedIncludes"] == ["tx-power", "appearance", "local-name"]
    assert adv["supportedSecondaryChannels"] == ["1M", "2M", "Coded"]
    settings = {(s["section"], s["key"]): s["value"] for s in report["mainConf"]["settings"]}
    assert report["mainConf"]["readable"] is True and report["mainConf"]["origin"] == "--main-conf"
    assert settings[("General", "JustWorksRepairing")] == "always"
    assert settings[("General", "Experimental")] == "true"
    assert settings[("General", "Privacy")] is None      # commented out: bluetoothd's default
    assert settings[("GATT", "KeySize")] == "16"
    # Channels unset on 5.82: its default 1, ATT only.
    assert settings[("GATT", "Channels")] is None
    assert report["mainConf"]["channelsForPhones"].startswith("ATT only")
    state = report["gattdState"]
    assert state["running"] is True and state["registered"] is True and state["adapter"] == "hci0"
    assert sorted(state["advertising"]) == ["beacon", "main"]
    assert state["lastError"] == ""
    assert any("default agent" in line for line in report["notVisible"])

    status, text = doctor(HEALTHY_KERNEL)
    assert status == 0
    assert "bluetoothd: 5.82 (from " in text and "  command line: " in text
    assert "ActiveInstances 2 (gattd's 2, other programs' 0)" in text
    assert "[GATT] KeySize = 16" in text
    assert "[General] Privacy not set (default off)" in text
    assert "does not publish which program is the default agent" in text
    assert text.rstrip().endswith("no known problem found")


def test_the_extended_advertising_length_bug_is_named(emulated, start_gattd, doctor, private_bus):
    """bluez/bluez #2268/#2269: bluetoothd 5.79 on Raspberry Pi OS's 6.12.93 refuses every
    advertisement; the daemon's log and status name the cause, --doctor too."""
    kernel = "6.12.93+rpt-rpi-v8"
    sd = emulated("ext-adv-data-length")
    g = start_gattd("control.json", env={"GATTD_KERNEL_RELEASE": kernel})
    sd.call("WaitForApplication", WAIT_MS)
    line = g.child.wait_for_line("advertisement not registered", 10)
    assert line is not None
    assert "org.bluez.Error.Failed: Failed to register advertisement" in line
    assert "known problem ext-adv-data-length" in line and "known.problem=ext-adv-data-length" in line
    assert "upgrade bluetoothd to 5.87" in line
    assert g.child.wait_for_line("control API ready", 10)
    states = dict(gattd_status(private_bus)["Advertisements"])
    assert states["main"].startswith("refused: org.bluez.Error.Failed: Failed to register advertisement; "
                                     "known problem ext-adv-data-length:")

    status, report = doctor_json(doctor, kernel)
    assert status == 1
    found = findings(report)
    assert set(found) == {"ext-adv-data-length"}, found
    finding = found["ext-adv-data-length"]
    assert finding["severity"] == "problem" and finding["certainty"] == "certain"
    assert "bluetoothd 5.79" in finding["evidence"] and "kernel 6.12.93+rpt-rpi-v8" in finding["evidence"]
    assert "gattd was refused" in finding["evidence"]
    assert "bluez/bluez#2268" in finding["references"]

    status, text = doctor(kernel)
    assert status == 1
    assert "PROBLEM ext-adv-data-length: the kernel refuses every advertisement" in text
    assert "what to do: upgrade bluetoothd to 5.87" in text


def test_the_same_refusal_on_an_unlisted_kernel_is_a_possible_match(emulated, start_gattd, doctor):
    """The daemon names a cause only when the kernel is one reported; --doctor, which knows
    bluetoothd's version, still offers it, marked possible."""
    sd = emulated("ext-adv-data-length")
    g = start_gattd("control.json", env={"GATTD_KERNEL_RELEASE": HEALTHY_KERNEL})
    sd.call("WaitForApplication", WAIT_MS)
    line = g.child.wait_for_line("advertisement not registered", 10)
    assert line is not None and "known problem" not in line
    assert g.child.wait_for_line("control API ready", 10)

    status, report = doctor_json(doctor, HEALTHY_KERNEL)
    assert status == 1
    finding = findings(report)["ext-adv-data-length"]
    assert finding["certainty"] == "possible"
    assert "is not among those reported" in finding["evidence"]


def test_bluetoothd_5_75_refusing_characteristics_without_handle_is_named(emulated, start_gattd, doctor,
                                                                          private_bus):
    """bluez/bluez #821: 5.74/5.75 refuse the application. bluetoothd gives the same answer for
    other causes, and the daemon does not know its version: the log and GetStatus name it as
    possible; --doctor, which asks bluetoothd's version, as certain."""
    sd = emulated("gatt-handle-required")
    g = start_gattd("control.json", env={"GATTD_KERNEL_RELEASE": HEALTHY_KERNEL})
    line = g.child.wait_for_line("bluetoothd refused the GATT application", 10)
    assert line is not None
    assert ("Failed to create entry in database; possibly known problem gatt-handle-required "
            "(only with bluetoothd 5.74-5.75; gattd --doctor checks)") in line
    assert "known.problem=gatt-handle-required" in line
    assert g.child.wait_for_line("control API ready", 10)
    status = gattd_status(private_bus)
    assert not status["Registered"]
    assert "possibly known problem gatt-handle-required" in status["LastError"]

    code, report = doctor_json(doctor, HEALTHY_KERNEL)
    assert code == 1
    found = findings(report)
    assert "gatt-handle-required" in found, found
    assert found["gatt-handle-required"]["certainty"] == "certain"
    assert "bluetoothd 5.75" in found["gatt-handle-required"]["evidence"]
    assert "gattd-refused" not in found       # the refusal is explained, not listed twice
    assert report["gattdState"]["registered"] is False


def test_bluetoothd_5_66_without_experimental_gets_notes_only(emulated, doctor):
    """The stand-in's default release: no SupportedCapabilities. Notes do not fail --doctor;
    gattd not running is said, not counted as a problem."""
    emulated("5.66")
    status, report = doctor_json(doctor, HEALTHY_KERNEL)
    assert status == 0, report["findings"]
    found = findings(report)
    assert set(found) == {"adv-update-failure", "adv-capabilities-experimental"}
    assert all(f["severity"] == "note" for f in found.values())
    assert report["adapters"][0]["advertising"]["supportedCapabilities"] is None
    assert report["gattdState"]["running"] is False


def test_controller_mode_bredr_is_a_problem(emulated, doctor):
    emulated("healthy-5.82")
    status, report = doctor_json(doctor, HEALTHY_KERNEL, main_conf="[General]\nControllerMode = bredr\n")
    assert status == 1
    assert set(findings(report)) == {"controller-mode-bredr"}


def test_an_unreadable_main_conf_is_said(emulated, doctor):
    emulated("healthy-5.82")
    status, report = doctor_json(doctor, HEALTHY_KERNEL, main_conf=None)
    assert status == 0
    assert report["mainConf"]["readable"] is False
    assert "No such file or directory" in report["mainConf"]["error"]
    assert report["mainConf"]["settings"] is None


def test_no_bluetoothd_is_a_problem(doctor):
    status, report = doctor_json(doctor, HEALTHY_KERNEL)
    assert status == 1
    assert set(findings(report)) == {"bluetoothd-not-running"}
    assert report["bluetoothd"]["running"] is False
    status, text = doctor(HEALTHY_KERNEL)
    assert status == 1 and "bluetoothd: not running" in text


def test_doctor_options_are_checked():
    binary = gattd_binary()
    result = subprocess.run([binary, "--json"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 64 and "--json and --main-conf go with --doctor" in result.stderr
