# SPDX-License-Identifier: MIT
"""One gattd per radio: `gattd --instance NAME` (what gattd@NAME.service runs) owns
org.gattd.NAME, reads NAME.json by default, and is reached by `gattctl --instance NAME`
and the Python library's `Peripheral(instance=NAME)`; two instances on one bus serve two
adapters of the stand-in and keep their state apart."""

import asyncio
import json
import os

import dbus

import gattd
from conftest import CONFIGS, run_gattctl
from harness import Standin


def definition(directory, name, label):
    config = json.load(open(os.path.join(CONFIGS, "control.json")))
    config.pop("adapter", None)
    for service in config["services"]:
        for characteristic in service["characteristics"]:
            if characteristic["id"] == "device-label":
                characteristic["value"] = {"utf8": label}
    path = os.path.join(str(directory), name + ".json")
    with open(path, "w") as f:
        json.dump(config, f)
    return path


def start_instance(private_bus, tmp_path, instance, adapter, extra=()):
    """gattd --instance INSTANCE --adapter ADAPTER with no --config: it must find
    $CONFIGURATION_DIRECTORY/INSTANCE.json by itself (gattd@.service passes no --config)."""
    from harness import Child
    state = tmp_path / ("state-" + instance)
    state.mkdir(exist_ok=True)
    log = open(str(tmp_path / ("gattd-%s.log" % instance)), "a")
    env = {"DBUS_SYSTEM_BUS_ADDRESS": private_bus.address, "STATE_DIRECTORY": str(state),
           "CONFIGURATION_DIRECTORY": str(tmp_path / "etc")}
    return Child([os.environ["GATTD_BIN"], "--instance", instance, "--adapter", adapter, *extra], env_extra=env,
                 log=log), state


def test_two_instances_serve_two_adapters_apart(private_bus, tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    definition(etc, "hci0", "radio zero")
    definition(etc, "hci1", "radio one")
    standin = Standin(private_bus, adapters="hci0,hci1", log_path=str(tmp_path / "standin.log"))
    children = []
    try:
        for instance in ("hci0", "hci1"):
            child, _ = start_instance(private_bus, tmp_path, instance, instance)
            children.append(child)
            line = child.wait_for_line("control API ready", 10)
            assert line and "dbus.name=org.gattd.%s" % instance in line, line
        standin.call("WaitForApplications", dbus.UInt32(2), dbus.UInt32(10000))
        assert len(standin.call("Applications")) == 2
        # gattctl --instance reaches the right one, before or after the subcommand.
        for instance, label in (("hci0", "radio zero"), ("hci1", "radio one")):
            out = run_gattctl(private_bus, "--instance", instance, "get", "device-label")
            assert out.returncode == 0 and '"%s"' % label in out.stdout, out
            out = run_gattctl(private_bus, "status", "--json", "--instance=" + instance)
            assert out.returncode == 0 and json.loads(out.stdout)["adapter"] == instance, out
        out = run_gattctl(private_bus, "--instance", "hci1", "set", "device-label", "--utf8", "changed on one")
        assert out.returncode == 0, out.stderr
        assert '"radio zero"' in run_gattctl(private_bus, "--instance", "hci0", "get", "device-label").stdout
        # The plain name has no owner: instances never answer for org.gattd.
        out = run_gattctl(private_bus, "status")
        assert out.returncode == 1 and "not reachable" in out.stderr, out
        out = run_gattctl(private_bus, "--instance", "hci2", "status")
        assert out.returncode == 1, out
        out = run_gattctl(private_bus, "--instance", "1bad", "status")
        assert out.returncode == 2 and "--instance" in out.stderr, out

        # The library's instance= is the same name.
        async def library():
            async with gattd.Peripheral(instance="hci1", bus_address=private_bus.address) as one:
                assert await one.get("device-label") == b"changed on one"
                assert (await one.status())["Adapter"] == "hci1"
            async with gattd.Peripheral(instance="hci0", bus_address=private_bus.address) as zero:
                assert await zero.get("device-label") == b"radio zero"
        asyncio.run(asyncio.wait_for(library(), 30))

        # State apart: each instance saved its own values in its own directory.
        saved = {i: (tmp_path / ("state-" + i) / "state.json").read_text() for i in ("hci0", "hci1")}
        changed = b"changed on one"
        assert any(form in saved["hci1"] for form in (changed.hex(), changed.decode())), saved["hci1"]
        assert not any(form in saved["hci0"] for form in (changed.hex(), changed.decode())), saved["hci0"]
        # A second gattd for the same instance cannot take its name and says so.
        child, _ = start_instance(private_bus, tmp_path, "hci1", "hci1", extra=("--state-dir", str(tmp_path)))
        children.append(child)
        line = child.wait_for_line("serving GATT without the control API", 10)
        assert line and "org.gattd.hci1 is owned by another process" in line, line
    finally:
        for child in children:
            child.stop()
        standin.stop()


def test_doctor_asks_the_instance(private_bus, tmp_path):
    etc = tmp_path / "etc"
    etc.mkdir()
    definition(etc, "hci1", "radio one")
    standin = Standin(private_bus, adapters="hci0,hci1", log_path=str(tmp_path / "standin.log"))
    child = None
    try:
        child, _ = start_instance(private_bus, tmp_path, "hci1", "hci1")
        assert child.wait_for_line("GATT application registered", 10)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address)
        import subprocess
        doctor = lambda *a: json.loads(subprocess.run(  # noqa: E731
            [os.environ["GATTD_BIN"], "--doctor", "--json", *a], env=env, capture_output=True, text=True,
            timeout=60).stdout)
        assert doctor("--instance", "hci1")["gattdState"]["running"] is True
        plain = doctor()["gattdState"]
        assert plain["running"] is False and "org.gattd has no owner" in plain["note"], plain
    finally:
        if child is not None:
            child.stop()
        standin.stop()
