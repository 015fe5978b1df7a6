# SPDX-License-Identifier: MIT
"""L2CAP channels (`channels`) against the stand-in, which has no kernel L2CAP: the
definition, `--check`, and the path this host really takes, where the kernel cannot make
the socket (no AF_BLUETOOTH here, as in the shipped unit's private network namespace).
The channels themselves are exercised in the guest (Tests/vm/scenarios/gattd-channels.sh)."""
import json
import os
import socket
import subprocess

import dbus
import pytest

from conftest import CONFIGS, gattd_binary, run_gattctl

WAIT = 10000  # ms
PSM_UUID = "abdd3056-28fa-441d-a470-55a75a52553a"


def kernel_makes_bluetooth_sockets():
    try:
        socket.socket(31, socket.SOCK_SEQPACKET, 0).close()
        return True
    except OSError:
        return False


def test_check_prints_the_channels():
    out = subprocess.run([gattd_binary(), "--check", "--config", os.path.join(CONFIGS, "channels.json")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert ("  channel firmware: psm chosen by the kernel (kept in the state), security encrypt, "
            "PSM characteristic (encrypt-read) in service dfu, program cat per channel") in out.stdout
    assert ("  channel log: psm 0x90, security none, PSM characteristic (read) in service logs, "
            "taker registered over the control API") in out.stdout


def test_check_names_the_path_of_each_channel_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "services": [{"id": "s", "uuid": "FE59"}], "channels": ['
                   '{"id": "a", "psm": 5, "service": "s"}, {"id": "b", "service": "t", "security": "encrypt"}]}')
    out = subprocess.run([gattd_binary(), "--check", "--config", str(bad)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 78
    assert "channels[0].psm: PSM 5 (0x5) is not an LE dynamic PSM" in out.stderr
    assert 'channels[1].service: no service has id "t"' in out.stderr
    assert 'channels[1].security: channel security "encrypt" needs a paired (encrypted) link' in out.stderr


def test_no_socket_no_psm_characteristic_and_the_drop_in_named(start_gattd, standin, private_bus, tmp_path):
    g = start_gattd("channels.json")
    standin.call("WaitForApplication", WAIT)
    attrs = standin.call("Attributes")
    uuids = [str(a["uuid"]).lower() for a in attrs]
    # The services and their own characteristics are served either way.
    assert "0000fe59-0000-1000-8000-00805f9b34fb" in uuids and "00002a19-0000-1000-8000-00805f9b34fb" in uuids
    if kernel_makes_bluetooth_sockets():
        # A host with Bluetooth: both listen, and each service carries its PSM (0x90 asked for).
        psms = [a for a in attrs if str(a["uuid"]).lower() == PSM_UUID]
        assert len(psms) == 2
        assert sorted(list(p["flags"])[0] for p in psms) == ["encrypt-read", "read"]
        return
    # This host: no socket, so no PSM nobody listens on.
    assert PSM_UUID not in uuids
    with open(g.log.name) as log:
        text = log.read()
    for channel in ("firmware", "log"):
        lines = [l for l in text.splitlines() if "channel cannot listen" in l and "channel=%s" % channel in l]
        assert lines, text
        assert "Address family not supported by protocol (errno 97)" in lines[0]
        assert ("install the drop-in /usr/share/doc/gattd/systemd/channels.conf as "
                "/etc/systemd/system/gattd.service.d/channels.conf") in lines[0]
        assert "no PSM characteristic is served for it" in lines[0]
    assert g.alive()
    # --doctor asks the running gattd and names the drop-in too.
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address)
    main_conf = tmp_path / "main.conf"
    main_conf.write_text("[General]\n")
    doctor = subprocess.run([gattd_binary(), "--doctor", "--json", "--main-conf", str(main_conf)],
                            capture_output=True, text=True, env=env, timeout=60)
    findings = [f for f in json.loads(doctor.stdout)["findings"] if f["id"] == "channel-not-listening"]
    assert sorted(f["summary"].split()[1] for f in findings) == ["firmware", "log"], doctor.stdout
    assert all("channels.conf" in f["remedy"] and "errno 97" in f["evidence"] for f in findings)
    assert doctor.returncode == 1


def manager(private_bus):
    bus = dbus.bus.BusConnection(private_bus.address)
    return bus, dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")


def test_control_api_lists_channels_and_refuses_takers_it_cannot_serve(start_gattd, standin, private_bus):
    g = start_gattd("channels.json")
    standin.call("WaitForApplication", WAIT)
    assert g.child.wait_for_line("control API ready", 10)
    bus, m = manager(private_bus)
    channels = {str(c["Id"]): c for c in m.ListChannels()}
    assert sorted(channels) == ["firmware", "log"]
    assert str(channels["firmware"]["Program"]) == "cat" and str(channels["firmware"]["Security"]) == "encrypt"
    assert list(channels["log"]["Open"]) == []
    refusals = {}
    for channel in ("nosuch", "firmware", "log"):
        with pytest.raises(dbus.exceptions.DBusException) as raised:
            m.RegisterChannel(channel, dbus.ObjectPath("/taker"))
        refusals[channel] = raised.value.get_dbus_message()
    assert refusals["nosuch"] == 'no channel "nosuch" in the definition'
    assert refusals["firmware"] == 'channel "firmware" runs its program cat for each connection'
    if kernel_makes_bluetooth_sockets():
        assert bool(channels["log"]["Listening"]) and int(channels["log"]["PSM"]) == 0x90
        m.RegisterChannel("log", dbus.ObjectPath("/taker"))
    else:
        assert not bool(channels["log"]["Listening"]) and "PSM" not in channels["log"]
        assert "Address family not supported by protocol" in str(channels["log"]["Error"])
        assert refusals["log"] == 'channel "log" does not listen (see gattd\'s log or gattd --doctor)'
    # gattctl shows the same, and `gattctl channel` exits with the refusal.
    status = run_gattctl(private_bus, "status")
    assert status.returncode == 0, status.stderr
    if kernel_makes_bluetooth_sockets():
        assert "  log: psm 0x90, security none, taker" in status.stdout
    else:
        assert "channels:\n  firmware: not listening (socket(AF_BLUETOOTH" in status.stdout
    assert json.loads(run_gattctl(private_bus, "status", "--json").stdout)["channels"][1]["id"] == "log"
    out = run_gattctl(private_bus, "channel", "firmware", "--", "cat")
    assert out.returncode != 0 and 'runs its program cat' in out.stderr
    bus.close()


RECEIVE_FILE = os.path.normpath(os.path.join(CONFIGS, "..", "..", "..", "config", "examples", "firmware-upload", "receive-file"))


def run_receive_file(tmp_path, sdus, close_early=False):
    """receive-file on a SOCK_SEQPACKET pair, as gattd relays a channel -> (answer, exit status)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = dict(os.environ, GATTD_SEND_MTU="100", GATTD_RECEIVE_MTU="4096", GATTD_DEVICE="00:11:22:33:44:55")
    proc = subprocess.Popen([RECEIVE_FILE, str(tmp_path / "uploads")], stdin=theirs, stdout=theirs, env=env)
    theirs.close()
    for sdu in sdus:
        ours.send(sdu)
    if close_early:
        ours.shutdown(socket.SHUT_WR)
    ours.settimeout(20)
    answer = ours.recv(200).decode()
    assert proc.wait(20) is not None
    ours.close()
    return answer, proc.returncode


def test_example_receive_file(tmp_path):
    import hashlib
    data = bytes(range(256)) * 40
    sdus = [b"%d fw-1.2.bin" % len(data)] + [data[i:i + 1000] for i in range(0, len(data), 1000)]
    answer, status = run_receive_file(tmp_path, sdus)
    assert (answer, status) == ("ok " + hashlib.sha256(data).hexdigest(), 0)
    assert (tmp_path / "uploads" / "fw-1.2.bin").read_bytes() == data
    answer, status = run_receive_file(tmp_path, [b"10 ../escape"])
    assert status == 1 and answer.startswith("error the header")
    answer, status = run_receive_file(tmp_path, [b"5000 short.bin", b"x" * 100], close_early=True)
    assert status == 1 and answer == "error the phone closed the channel after 100 of 5000 bytes"
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == ["fw-1.2.bin"]
