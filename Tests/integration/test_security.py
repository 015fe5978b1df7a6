# SPDX-License-Identifier: MIT
"""Security against the stand-in bluetoothd: gattd's pairing agent as bluetoothd
calls it, the pairing window on Adapter1.Pairable, bonds and bondedOnly, and values that
only bluetoothd may see. The real pairing over the air is Tests/vm/scenarios/gattd-security.sh.
"""

import json
import os
import threading

import dbus
import dbus.bus
import dbus.mainloop.glib
import pytest
from gi.repository import GLib

from conftest import REPO, run_gattctl, watch_event, watch_events
from fixtures import wait_until
from harness import CONTROL_IFACE, CONTROL_NAME, CONTROL_PATH, one_by_uuid

WAIT = dbus.UInt32(10000)
SECRET = "5ec0de02-1234-5678-1234-56789abc0000"
ADAPTER = "org.bluez.Adapter1"
DEVICE = "/org/bluez/hci0/dev_00_11_22_33_44_55"
REJECTED = "org.bluez.Error.Rejected"


def adapter_props(standin):
    obj = standin.conn.get_object("org.bluez", "/org/bluez/hci0", introspect=False)
    return dbus.Interface(obj, "org.freedesktop.DBus.Properties").GetAll(ADAPTER)


def agents(standin):
    return [(str(o), str(p), str(c), bool(d)) for o, p, c, d in standin.call("Agents")]


def agent_call(standin, member, signature="", *args):
    """bluetoothd calling the default agent: the answer, or the D-Bus error name."""
    try:
        return list(standin.call("AgentCall", member, signature, dbus.Array(args, signature="v")))
    except dbus.DBusException as e:
        return e.get_dbus_name()


def serving(g, standin):
    standin.call("WaitForApplication", WAIT)
    assert g.child.wait_for_line("pairing agent registered", 10)
    assert g.child.wait_for_line("control API ready", 10)


def test_just_works_agent_window_and_restore(start_gattd, standin, private_bus):
    found = adapter_props(standin)
    assert not found["Pairable"] and found["PairableTimeout"] == 0
    g = start_gattd("security-jw.json")
    serving(g, standin)
    w = watch_events(private_bus)
    # Registered with NoInputNoOutput and made the default agent.
    [(owner, path, capability, default)] = agents(standin)
    assert (path, capability, default) == ("/org/gattd/agent", "NoInputNoOutput", True)
    # The window is open: the adapter is pairable, with bluetoothd's own timeout as a backstop.
    props = adapter_props(standin)
    assert props["Pairable"] and 1 <= props["PairableTimeout"] <= 3
    assert agent_call(standin, "RequestAuthorization", "o", dbus.ObjectPath(DEVICE)) == []
    # What just-works never does.
    assert agent_call(standin, "RequestPasskey", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    assert agent_call(standin, "RequestPinCode", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    assert agent_call(standin, "DisplayPinCode", "os", dbus.ObjectPath(DEVICE), "0000") == REJECTED
    assert agent_call(standin, "RequestConfirmation", "ou", dbus.ObjectPath(DEVICE), dbus.UInt32(1234)) == REJECTED
    assert agent_call(standin, "DisplayPasskey", "ouq", dbus.ObjectPath(DEVICE), dbus.UInt32(1), dbus.UInt16(0)) == REJECTED
    assert agent_call(standin, "AuthorizeService", "os", dbus.ObjectPath(DEVICE), "0000110b-0000-1000-8000-00805f9b34fb") == REJECTED
    assert agent_call(standin, "Cancel") == []
    # The window closes on time (3 s): the adapter is not pairable and the agent refuses.
    watch_event(w, within=15, event="pairing", state="closed")
    assert not adapter_props(standin)["Pairable"]
    assert agent_call(standin, "RequestAuthorization", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    out = run_gattctl(private_bus, "pairing")
    assert out.stdout.strip() == "pairing just-works: closed (gattctl pairing open opens it)"
    # gattctl pairing open: open again, for the seconds asked.
    out = run_gattctl(private_bus, "pairing", "open", "30")
    assert out.returncode == 0 and out.stdout.strip() == "pairing open for 30 s", out.stderr
    watch_event(w, within=15, event="pairing", state="open", seconds="30")
    props = adapter_props(standin)
    assert props["Pairable"] and 29 <= props["PairableTimeout"] <= 30
    assert agent_call(standin, "RequestAuthorization", "o", dbus.ObjectPath(DEVICE)) == []
    w.stop()
    # Stopping puts the adapter back as gattd found it and unregisters the agent.
    g.stop()
    props = adapter_props(standin)
    assert (bool(props["Pairable"]), int(props["PairableTimeout"])) == (False, 0)
    assert agents(standin) == []


def test_agent_answers_only_bluetoothd(start_gattd, standin, private_bus):
    g = start_gattd("security-jw.json")
    serving(g, standin)
    [(owner, path, _, _)] = agents(standin)
    intruder = private_bus.connect()
    agent = dbus.Interface(intruder.get_object(owner, path, introspect=False), "org.bluez.Agent1")
    with pytest.raises(dbus.DBusException) as refused:
        agent.RequestAuthorization(dbus.ObjectPath(DEVICE))
    assert refused.value.get_dbus_name() == REJECTED
    assert g.child.wait_for_line("pairing agent call refused: not from bluetoothd", 5)


def test_agent_registered_again_after_bluetoothd_restart(start_gattd, standin):
    g = start_gattd("security-jw.json")
    serving(g, standin)
    standin.restart()
    # The new bluetoothd knows no agent until gattd registers it again, as its default.
    standin.call("WaitForApplication", WAIT)
    wait_until(lambda: len(agents(standin)) == 1 and agents(standin)[0][3], 10, "the agent registered again")
    assert agents(standin)[0][1:] == ("/org/gattd/agent", "NoInputNoOutput", True)
    assert agent_call(standin, "Cancel") == []


def test_closed_window_stays_closed_after_bluetoothd_restart(start_gattd, standin, private_bus):
    """Fail closed (docs/fail-closed.md): bluetoothd makes the adapter pairable when gattd's agent
    becomes the default again; gattd puts the closed window back on the adapter."""
    g = start_gattd("security-jw.json")
    serving(g, standin)
    w = watch_events(private_bus)
    watch_event(w, within=15, event="pairing", state="closed")
    w.stop()
    assert not adapter_props(standin)["Pairable"]
    standin.restart()
    standin.call("WaitForApplication", WAIT)
    wait_until(lambda: len(agents(standin)) == 1 and agents(standin)[0][3], 10, "the agent registered again")
    log = lambda: [str(line) for line in standin.call("Log")]  # noqa: E731

    def closed_after_default():
        lines = log()
        default = [i for i, line in enumerate(lines) if " default agent " in line]
        return default and any(line.endswith(" adapter hci0 Pairable=False") for line in lines[default[-1]:])
    wait_until(closed_after_default, 10, "gattd to close the adapter again after its agent became the default")
    assert not adapter_props(standin)["Pairable"]
    assert agent_call(standin, "RequestAuthorization", "o", dbus.ObjectPath(DEVICE)) == REJECTED


def test_display_passkey_reaches_journal_watch_and_program(start_gattd, standin, private_bus, tmp_path):
    out_file = tmp_path / "passkey.txt"
    g = start_gattd("security-pk.json", env={"PASSKEY_OUT": str(out_file)})
    serving(g, standin)
    [(_, _, capability, default)] = agents(standin)
    assert (capability, default) == ("DisplayOnly", True)
    w = watch_events(private_bus)
    assert agent_call(standin, "DisplayPasskey", "ouq", dbus.ObjectPath(DEVICE), dbus.UInt32(4321), dbus.UInt16(0)) == []
    seen = watch_event(w, within=15, event="passkey")
    assert seen == {"event": "passkey", "passkey": "004321", "address": "00:11:22:33:44:55", "device": DEVICE}
    assert g.child.wait_for_line("passkey for pairing: 004321", 5)
    wait_until(lambda: out_file.exists() and out_file.read_text().strip(), 10, "the onPasskey program")
    assert out_file.read_text().split() == ["004321", "00:11:22:33:44:55", DEVICE]
    # Keypress updates repeat the same passkey: announced once.
    assert agent_call(standin, "DisplayPasskey", "ouq", dbus.ObjectPath(DEVICE), dbus.UInt32(4321), dbus.UInt16(3)) == []
    # display-passkey pairs only with a passkey: Just Works and typing one in are refused.
    assert agent_call(standin, "RequestAuthorization", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    assert agent_call(standin, "RequestPasskey", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    out = run_gattctl(private_bus, "pairing", "open")
    assert out.returncode == 5 and "always" in out.stderr
    w.stop()
    assert [line for line in w.out.lines if '"passkey"' in line].__len__() == 1


@pytest.mark.exec_failure
def test_passkey_program_that_cannot_start_refuses_the_pairing(start_gattd, standin, private_bus, tmp_path):
    """Fail closed (docs/fail-closed.md): the passkey is shown nowhere and the central is disconnected."""
    config = json.load(open(os.path.join(REPO, "Tests", "integration", "configs", "security-pk.json")))
    config["security"]["onPasskey"] = {"argv": [str(tmp_path / "no-such-passkey-program")]}
    path = tmp_path / "pk-missing.json"
    path.write_text(json.dumps(config))
    g = start_gattd(str(path))
    serving(g, standin)
    w = watch_events(private_bus)
    device = standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    assert agent_call(standin, "DisplayPasskey", "ouq", device, dbus.UInt32(4321), dbus.UInt16(0)) == []
    line = g.child.wait_for_line("pairing refused: the passkey program cannot start", 10)
    assert line and "No such file" in line, line
    log = lambda: [str(line) for line in standin.call("Log")]  # noqa: E731
    wait_until(lambda: any("%s Disconnect" % device in line for line in log()), 10, "Disconnect of the central")
    # gattd logs in order: had it shown the passkey, the line would be before the refusal.
    assert not [line for line in g.child.out.lines if "004321" in line], "the passkey was shown"
    w.stop()
    assert not [line for line in w.out.lines if '"passkey"' in line], "PasskeyDisplayed was sent"


@pytest.mark.timing
def test_bonds_list_remove_and_bonded_only(start_gattd, standin, private_bus):
    g = start_gattd("security-jw.json")
    serving(g, standin)
    standin.call("SetDeviceBonded", "hci0", "00:11:22:33:44:55", True)
    bonded = standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    wait_until(lambda: run_gattctl(private_bus, "bonds").stdout.strip() == "00:11:22:33:44:55 - bonded connected", 10,
               "gattctl bonds to list the bonded central")
    listed = json.loads(run_gattctl(private_bus, "bonds", "--json").stdout)
    assert listed == [{"address": "00:11:22:33:44:55", "addressType": "public", "name": None, "paired": True,
                       "bonded": True,
                       "trusted": False, "connected": True}]
    # Pairing closes (3 s); a stranger that connects now is dropped, the bonded one stays.
    w = watch_events(private_bus)
    watch_event(w, within=15, event="pairing", state="closed")
    stranger = standin.call("SetDeviceConnected", "hci0", "00:66:77:88:99:AA", True)
    assert g.child.wait_for_line("disconnecting a central that is not bonded", 10)
    log = lambda: [str(line) for line in standin.call("Log")]  # noqa: E731
    wait_until(lambda: any("%s Disconnect" % stranger in line for line in log()), 10, "Disconnect of the stranger")
    assert not any("%s Disconnect" % bonded in line for line in log())
    # bonds remove: bluetoothd forgets it; a second remove is an unknown bond (exit 3).
    out = run_gattctl(private_bus, "bonds", "remove", "00:11:22:33:44:55")
    assert out.returncode == 0 and out.stdout.strip() == "00:11:22:33:44:55: removed", out.stderr
    assert any("%s removed by" % bonded in line for line in log())
    wait_until(lambda: run_gattctl(private_bus, "bonds").stdout == "", 10, "the bond list to empty")
    out = run_gattctl(private_bus, "bonds", "remove", "00:11:22:33:44:55")
    assert out.returncode == 3 and "no bond with 00:11:22:33:44:55" in out.stderr
    out = run_gattctl(private_bus, "bonds", "remove", "not-an-address")
    assert out.returncode == 5 and "not an address" in out.stderr
    w.stop()


def test_bonded_only_checks_centrals_connected_before_gattd_listed_them(start_gattd, standin, tmp_path):
    """Fail closed (docs/fail-closed.md): a central connected before gattd (or a restarted bluetoothd)
    listed the adapter's devices is checked as well, not only those that connect later."""
    config = json.load(open(os.path.join(REPO, "Tests", "integration", "configs", "security-jw.json")))
    config["security"] = {"pairing": "just-works", "pairable": "never", "bondedOnly": True}
    path = tmp_path / "bonded-only.json"
    path.write_text(json.dumps(config))
    standin.call("SetDeviceBonded", "hci0", "00:11:22:33:44:55", True)
    bonded = standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    stranger = standin.call("SetDeviceConnected", "hci0", "00:66:77:88:99:AA", True)
    g = start_gattd(str(path))
    serving(g, standin)
    line = g.child.wait_for_line("disconnecting a central that is not bonded", 10)
    assert line and "00:66:77:88:99:AA" in line, line
    log = lambda: [str(line) for line in standin.call("Log")]  # noqa: E731
    wait_until(lambda: any("%s Disconnect" % stranger in line for line in log()), 10, "Disconnect of the stranger")
    assert not any("%s Disconnect" % bonded in line for line in log())


def test_values_only_for_bluetoothd(start_gattd, standin, private_bus):
    g = start_gattd("security-jw.json")
    serving(g, standin)
    secret = one_by_uuid(standin.call("Attributes"), SECRET)["path"]
    # Another process on the bus: a match rule for every PropertiesChanged, then Get.
    other = dbus.bus.BusConnection(private_bus.address, mainloop=dbus.mainloop.glib.DBusGMainLoop())
    heard = []
    other.add_signal_receiver(lambda *a, **k: heard.append(k.get("path")), "PropertiesChanged",
                              "org.freedesktop.DBus.Properties", path_keyword="path")
    obj = other.get_object(g_name(standin, other), secret, introspect=False)
    with pytest.raises(dbus.DBusException) as denied:
        dbus.Interface(obj, "org.freedesktop.DBus.Properties").Get("org.bluez.GattCharacteristic1", "Value")
    assert denied.value.get_dbus_name() == "org.freedesktop.DBus.Error.AccessDenied"
    every = dbus.Interface(obj, "org.freedesktop.DBus.Properties").GetAll("org.bluez.GattCharacteristic1")
    assert "Value" not in every and str(every["UUID"]) == SECRET
    for _, app in standin.call("Applications"):
        root = dbus.Interface(other.get_object(g_name(standin, other), app, introspect=False),
                              "org.freedesktop.DBus.ObjectManager").GetManagedObjects()
        assert root and all("Value" not in props for ifaces in root.values() for props in ifaces.values())
    # bluetoothd (the stand-in) still reads it and gets notifications, addressed to it alone.
    standin.call("Subscribe", secret, DEVICE)
    out = run_gattctl(private_bus, "set", "secret", "--utf8", "new secret")
    assert out.returncode == 0, out.stderr
    values = standin.call("WaitForNotifications", secret, dbus.UInt32(1), WAIT)
    assert bytes(values[-1]) == b"new secret"
    # The other connection's match rule saw bluetoothd-side traffic only, never gattd's values:
    # pump its queue until a broadcast from gattd would have arrived (a round trip to gattd).
    # A broadcast it must hear (the control: its match rule works), then a round trip to gattd
    # so that anything gattd sent before is in its queue, then dispatch the queue.
    standin.call("SetDeviceConnected", "hci0", "00:11:22:33:44:55", True)
    for name in (g_name(standin, other), "org.bluez"):
        dbus.Interface(other.get_object(name, "/", introspect=False), "org.freedesktop.DBus.Peer").Ping()
    context = GLib.MainContext.default()
    while context.pending():
        context.iteration(False)
    assert DEVICE in [str(p) for p in heard], heard
    assert not [p for p in heard if p and str(p).startswith("/org/gattd/")], heard


def g_name(standin, conn):
    """gattd's unique name (the owner of org.gattd)."""
    return str(conn.get_name_owner("org.gattd"))


# Numeric comparison (DisplayYesNo): bluetoothd's RequestConfirmation waits for a decision.

class PendingAgentCall:
    """bluetoothd's RequestConfirmation on gattd's agent, waiting for its answer in a thread
    (on a connection of its own); result() is [] when accepted or the D-Bus error name."""

    def __init__(self, private_bus, device=DEVICE, passkey=4321):
        self.answer = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(private_bus, device, passkey), daemon=True)
        self.thread.start()

    def _run(self, private_bus, device, passkey):
        conn = private_bus.connect()
        control = dbus.Interface(conn.get_object(CONTROL_NAME, CONTROL_PATH, introspect=False), CONTROL_IFACE)
        args = dbus.Array([dbus.ObjectPath(device), dbus.UInt32(passkey)], signature="v")
        try:
            self.answer = list(control.AgentCall("RequestConfirmation", "ou", args, timeout=40))
        except dbus.DBusException as e:
            self.answer = e.get_dbus_name()
        finally:
            conn.close()
            self.done.set()

    def result(self, within=30):
        assert self.done.wait(within), "RequestConfirmation was not answered within %d s" % within
        return self.answer


def nc_config(tmp_path, **security):
    config = json.load(open(os.path.join(REPO, "Tests", "integration", "configs", "security-nc.json")))
    config["security"].update(security)
    path = tmp_path / "nc.json"
    path.write_text(json.dumps(config))
    return str(path)


def asked(w, device=DEVICE, address="00:11:22:33:44:55", passkey="004321"):
    seen = watch_event(w, within=15, event="confirm")
    assert seen == {"event": "confirm", "passkey": passkey, "address": address, "device": device}


def test_numeric_comparison_confirmed_with_gattctl(start_gattd, standin, private_bus):
    g = start_gattd("security-nc.json")
    serving(g, standin)
    [(_, _, capability, default)] = agents(standin)
    assert (capability, default) == ("DisplayYesNo", True)
    w = watch_events(private_bus)
    call = PendingAgentCall(private_bus)
    asked(w)
    line = g.child.wait_for_line("confirm pairing: 004321", 5)
    assert line and "00:11:22:33:44:55" in line, line
    assert not call.done.is_set(), "answered before anyone decided"
    # Only one confirmation per central: a second request is refused at once, the first waits on.
    assert agent_call(standin, "RequestConfirmation", "ou", dbus.ObjectPath(DEVICE), dbus.UInt32(1)) == REJECTED
    assert g.child.wait_for_line("a confirmation for this central is already pending", 5)
    assert not call.done.is_set()
    out = run_gattctl(private_bus, "pairing", "confirm", "00:11:22:33:44:55")
    assert (out.returncode, out.stdout.strip()) == (0, "00:11:22:33:44:55: confirmed"), out.stderr
    assert call.result() == []
    assert g.child.wait_for_line("pairing accepted (numeric comparison)", 5)
    # Nothing waits any more: confirming again is a clear error (exit 3).
    out = run_gattctl(private_bus, "pairing", "confirm", "00:11:22:33:44:55")
    assert out.returncode == 3 and "no pairing confirmation is pending for 00:11:22:33:44:55" in out.stderr, out
    out = run_gattctl(private_bus, "pairing", "reject")
    assert out.returncode == 3 and "no pairing confirmation is pending" in out.stderr, out
    # This mode pairs by comparing digits only: Just Works and passkeys are refused.
    assert agent_call(standin, "RequestAuthorization", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    assert agent_call(standin, "RequestPasskey", "o", dbus.ObjectPath(DEVICE)) == REJECTED
    w.stop()


def test_numeric_comparison_rejected_with_gattctl(start_gattd, standin, private_bus):
    g = start_gattd("security-nc.json")
    serving(g, standin)
    w = watch_events(private_bus)
    call = PendingAgentCall(private_bus, passkey=987654)
    asked(w, passkey="987654")
    out = run_gattctl(private_bus, "pairing", "reject")
    assert (out.returncode, out.stdout.strip()) == (0, "pairing rejected"), out.stderr
    assert call.result() == REJECTED
    line = g.child.wait_for_line("pairing request refused", 5)
    assert line and "rejected by gattctl or a control client" in line, line
    w.stop()


def test_numeric_comparison_nobody_decides_rejected_on_timeout(start_gattd, standin, private_bus, tmp_path):
    """Fail closed (docs/fail-closed.md): no decision within confirmSeconds rejects the pairing."""
    g = start_gattd(nc_config(tmp_path, confirmSeconds=2))
    serving(g, standin)
    w = watch_events(private_bus)
    call = PendingAgentCall(private_bus)
    asked(w)
    assert call.result(within=20) == REJECTED
    line = g.child.wait_for_line("pairing request refused", 5)
    assert line and "nobody confirmed within 2 s" in line, line
    out = run_gattctl(private_bus, "pairing", "confirm", "00:11:22:33:44:55")
    assert out.returncode == 3, out
    w.stop()


@pytest.mark.parametrize("status, answer", [(0, []), (1, REJECTED)])
def test_numeric_comparison_program_decides(start_gattd, standin, private_bus, tmp_path, status, answer):
    out_file = tmp_path / "confirm.txt"
    program = 'echo "$GATTD_PASSKEY $GATTD_DEVICE $GATTD_DEVICE_PATH" >"$CONFIRM_OUT"; exit %d' % status
    g = start_gattd(nc_config(tmp_path, onConfirm={"argv": ["/bin/sh", "-c", program]}),
                    env={"CONFIRM_OUT": str(out_file)})
    serving(g, standin)
    call = PendingAgentCall(private_bus, passkey=42)
    assert call.result() == answer
    assert out_file.read_text().split() == ["000042", "00:11:22:33:44:55", DEVICE]
    if status:
        line = g.child.wait_for_line("pairing request refused", 5)
        assert line and "the onConfirm program did not accept (exit status 1)" in line, line
    else:
        assert g.child.wait_for_line("pairing accepted (numeric comparison)", 5)


@pytest.mark.exec_failure
def test_numeric_comparison_program_that_cannot_start_rejects(start_gattd, standin, private_bus, tmp_path):
    g = start_gattd(nc_config(tmp_path, onConfirm={"argv": [str(tmp_path / "no-such-confirm-program")]}))
    serving(g, standin)
    w = watch_events(private_bus)
    assert PendingAgentCall(private_bus).result() == REJECTED
    line = g.child.wait_for_line("pairing request refused", 5)
    assert line and "the onConfirm program cannot start" in line, line
    w.stop()
    assert not [line for line in w.out.lines if '"confirm"' in line], "PairingConfirmation was sent"


def test_numeric_comparison_only_bluetoothd_asks(start_gattd, standin, private_bus):
    """An attacker on the bus cannot start a confirmation to have it accepted: only bluetoothd's
    RequestConfirmation is heard (who may confirm is the bus policy, systemd/tests)."""
    g = start_gattd("security-nc.json")
    serving(g, standin)
    [(owner, path, _, _)] = agents(standin)
    intruder = private_bus.connect()
    agent = dbus.Interface(intruder.get_object(owner, path, introspect=False), "org.bluez.Agent1")
    with pytest.raises(dbus.DBusException) as refused:
        agent.RequestConfirmation(dbus.ObjectPath(DEVICE), dbus.UInt32(1))
    assert refused.value.get_dbus_name() == REJECTED
    assert g.child.wait_for_line("pairing agent call refused: not from bluetoothd", 5)
    out = run_gattctl(private_bus, "pairing", "confirm")
    assert out.returncode == 3, out


def test_other_modes_refuse_numeric_comparison(start_gattd, standin, private_bus):
    g = start_gattd("security-pk.json", env={"PASSKEY_OUT": os.devnull})
    serving(g, standin)
    assert agent_call(standin, "RequestConfirmation", "ou", dbus.ObjectPath(DEVICE), dbus.UInt32(1)) == REJECTED
    line = g.child.wait_for_line("pairing request refused", 5)
    assert line and "numeric comparison is not offered (display-passkey)" in line, line
    out = run_gattctl(private_bus, "pairing", "confirm")
    assert out.returncode == 5 and "gattd does not confirm pairings" in out.stderr, out
