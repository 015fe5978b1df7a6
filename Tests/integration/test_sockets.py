# SPDX-License-Identifier: MIT
"""The socket path: AcquireNotify and AcquireWrite against the stand-in, which
acquires, reads and closes sockets the way bluetoothd 5.66 ("shared": one socket per
characteristic) and 5.76+ ("per-device": one per central) do (Tests/standin/acquired.py).
"""

import json
import os
import socket
import signal
import struct
import subprocess

import dbus
import pytest

from conftest import CONFIGS, REPO, Gattd, run_gattctl, watch_events
from fixtures import path_of, print_on_failure, read, write
from harness import DEVICE, DEVICE2, PrivateBus, Standin

WAIT_MS = dbus.UInt32(10000)
CHRC = "org.bluez.GattCharacteristic1"
STREAM = "12345678-1234-5678-1234-56789abc8001"
SAMPLES = "12345678-1234-5678-1234-56789abc7001"
TICKER = "12345678-1234-5678-1234-56789abc8003"
CMD = "12345678-1234-5678-1234-56789abc8004"
PLAIN = "12345678-1234-5678-1234-56789abc8005"


@pytest.fixture
def gattd(start_gattd, standin):
    g = start_gattd("sockets.json")
    owner, _ = standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    yield g, str(owner)
    assert g.alive(), "gattd exited during the test"


@pytest.fixture
def manager(private_bus):
    bus = private_bus.connect()
    return dbus.Interface(bus.get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")


def chrc_property(private_bus, owner, path, name):
    """What any process on the bus reads of gattd's object (Notifying, NotifyAcquired...)."""
    bus = private_bus.connect()
    props = dbus.Interface(bus.get_object(owner, path, introspect=False), "org.freedesktop.DBus.Properties")
    return props.Get(CHRC, name)


def wait_sockets(standin, path, kind, count):
    return int(standin.call("WaitForSockets", path, kind, dbus.UInt32(count), WAIT_MS))


def test_only_characteristics_that_opt_in_expose_acquired(gattd, standin):
    acquire = {str(a["uuid"]): [str(x) for x in a["acquire"]]
               for a in standin.call("Attributes") if a["kind"] == "characteristic"}
    assert acquire[STREAM] == ["NotifyAcquired"]
    assert acquire[TICKER] == ["NotifyAcquired"]
    assert acquire[CMD] == ["WriteAcquired"]
    assert acquire[PLAIN] == []


def test_notifications_go_out_as_datagrams_on_one_shared_socket(gattd, standin, manager, private_bus):
    _, owner = gattd
    stream = path_of(standin, STREAM)
    assert not chrc_property(private_bus, owner, stream, "Notifying")
    standin.call("SetLinkMTU", dbus.UInt16(185))
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, "notify", 1) == 1
    calls = [(str(m), dict(o)) for m, p, o in standin.call("AcquireCalls") if str(p) == stream]
    assert [m for m, _ in calls] == ["AcquireNotify"]
    assert str(calls[0][1]["device"]) == DEVICE and int(calls[0][1]["mtu"]) == 185
    assert list(standin.call("SocketTypes")) == [socket.SOCK_SEQPACKET]
    # gattd answered with the MTU bluetoothd gave, and now counts the characteristic subscribed
    assert [(str(d), int(m)) for d, m, _ in standin.call("Sockets", stream, "notify")] == [("", 185)]
    assert chrc_property(private_bus, owner, stream, "Notifying")
    assert chrc_property(private_bus, owner, stream, "NotifyAcquired")

    standin.call("Subscribe", stream, DEVICE2)        # 5.66: the second central only counts
    for n in range(1, 6):   # one at a time: "delivery": "latest" sends the newest value at each slot
        manager.SetValue("stream", dbus.ByteArray(struct.pack("<I", n)))
        values = standin.call("WaitForNotifications", stream, dbus.UInt32(n), WAIT_MS)
    assert [struct.unpack("<I", bytes(v))[0] for v in values] == [1, 2, 3, 4, 5]
    assert set(standin.call("NotificationPaths", stream)) == {"socket"}
    assert len([c for c in standin.call("AcquireCalls") if str(c[1]) == stream]) == 1

    standin.call("Unsubscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, "notify", 1) == 1
    standin.call("Unsubscribe", stream, DEVICE2)      # the last one: bluetoothd closes the socket
    assert gattd[0].child.wait_for_line("unsubscribed", 10)
    assert not chrc_property(private_bus, owner, stream, "Notifying")
    assert not chrc_property(private_bus, owner, stream, "NotifyAcquired")
    manager.SetValue("stream", dbus.ByteArray(struct.pack("<I", 99)))
    assert read(standin, STREAM) == struct.pack("<I", 99)
    assert len(standin.call("Notifications", stream)) == 5


def test_per_device_sockets_each_get_every_notification(gattd, standin, manager, private_bus):
    _, owner = gattd
    standin.call("SetAcquireMode", "per-device")
    stream = path_of(standin, STREAM)
    standin.call("Subscribe", stream, DEVICE)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, "notify", 2) == 2
    devices = sorted(str(o["device"]) for m, p, o in standin.call("AcquireCalls") if str(p) == stream)
    assert devices == sorted([DEVICE, DEVICE2])

    manager.SetValue("stream", dbus.ByteArray(b"\x01\x00\x00\x00"))
    standin.call("WaitForNotifications", stream, dbus.UInt32(2), WAIT_MS)
    assert sorted((str(d), int(n)) for d, _, n in standin.call("Sockets", stream, "notify")) == \
        sorted([(DEVICE, 1), (DEVICE2, 1)])

    standin.call("Unsubscribe", stream, DEVICE)       # only that central's socket closes
    assert wait_sockets(standin, stream, "notify", 1) == 1
    assert gattd[0].child.wait_for_line("unsubscribed", 10)
    assert chrc_property(private_bus, owner, stream, "Notifying")
    manager.SetValue("stream", dbus.ByteArray(b"\x02\x00\x00\x00"))
    values = standin.call("WaitForNotifications", stream, dbus.UInt32(3), WAIT_MS)
    assert bytes(values[-1]) == b"\x02\x00\x00\x00"
    assert [(str(d), int(n)) for d, _, n in standin.call("Sockets", stream, "notify")] == [(DEVICE2, 2)]

    standin.call("Unsubscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, "notify", 0) == 0


def test_value_source_timer_runs_only_while_a_socket_is_open(gattd, standin):
    ticker = path_of(standin, TICKER)
    standin.call("Subscribe", ticker, DEVICE)
    values = standin.call("WaitForNotifications", ticker, dbus.UInt32(5), WAIT_MS)
    counts = [struct.unpack("<H", bytes(v))[0] for v in values]
    # consecutive modulo the uint16 range: a counter that ran long enough wraps to 0
    assert all((b - a) % 65536 == 1 for a, b in zip(counts, counts[1:])), counts
    assert set(standin.call("NotificationPaths", ticker)) == {"socket"}
    standin.call("Unsubscribe", ticker, DEVICE)
    assert gattd[0].child.wait_for_line("unsubscribed", 10)
    stopped = read(standin, TICKER)
    # timers stop with the last subscriber: the value does not move any more (a read after
    # another read is ordered after any timer tick gattd would run in between)
    assert read(standin, TICKER) == stopped


def test_delivery_all_through_the_socket_loses_no_sample(gattd, standin, private_bus):
    samples = path_of(standin, SAMPLES)
    standin.call("Subscribe", samples, DEVICE)
    assert wait_sockets(standin, samples, "notify", 1) == 1
    count = 3000
    producer = subprocess.run(
        ["/usr/bin/python3", os.path.join(REPO, "examples", "stream.py"), "--id", "samples", "--count", str(count)],
        env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=private_bus.address),
        capture_output=True, text=True, timeout=120)
    assert producer.returncode == 0, producer.stderr
    values = standin.call("WaitForNotifications", samples, dbus.UInt32(count), dbus.UInt32(60000), timeout=90)
    sequence = [struct.unpack("<IH", bytes(v))[0] for v in values]
    assert sequence == list(range(count)), "lost or reordered: first gap at %s" % next(
        (i for i, s in enumerate(sequence) if s != i), None)
    assert set(standin.call("NotificationPaths", samples)) == {"socket"}


def test_writes_arrive_as_datagrams_and_go_through_the_write_pipeline(standin, start_gattd):
    g = start_gattd("sockets.json")
    standin.call("WaitForApplication", WAIT_MS)
    cmd = path_of(standin, CMD)
    write(standin, CMD, b"\x01")
    assert wait_sockets(standin, cmd, "write", 1) == 1
    assert read(standin, CMD) == b"\x01"
    for value in (b"\x02", b"\x03\x04", b"\x05\x06\x07"):
        write(standin, CMD, value)
    assert read(standin, CMD) == b"\x05\x06\x07"
    assert [str(m) for m, p, _ in standin.call("AcquireCalls") if str(p) == cmd] == ["AcquireWrite"]
    assert [int(n) for _, _, n in standin.call("Sockets", cmd, "write")] == [4]

    # longer than maxLength 8: bluetoothd acknowledged it, gattd drops it and says so
    write(standin, CMD, b"\xff" * 9)
    assert g.child.wait_for_line("write from the socket dropped", 10)
    assert read(standin, CMD) == b"\x05\x06\x07"

    # the central disconnects: bluetoothd closes the socket, gattd closes its end; the next
    # write acquires a new one
    standin.call("CloseWriteSocket", cmd, DEVICE)
    assert g.child.wait_for_line("write socket closed", 10)
    write(standin, CMD, b"\x08")
    assert wait_sockets(standin, cmd, "write", 1) == 1
    assert read(standin, CMD) == b"\x08"
    assert len([1 for m, p, _ in standin.call("AcquireCalls") if str(p) == cmd]) == 2

    # persisted like any write (cmd has "persist": true)
    assert g.alive()
    g.stop()
    start_gattd("sockets.json", state_dir=g.state_dir)
    standin.call("WaitForApplication", WAIT_MS)
    assert read(standin, CMD) == b"\x08"


def test_per_device_write_sockets(gattd, standin):
    standin.call("SetAcquireMode", "per-device")
    cmd = path_of(standin, CMD)
    write(standin, CMD, b"\x11", device=DEVICE)
    write(standin, CMD, b"\x22", device=DEVICE2)
    assert wait_sockets(standin, cmd, "write", 2) == 2
    assert read(standin, CMD) == b"\x22"


def listed(manager):
    return {str(e["Id"]): e for e in manager.ListCharacteristics()}


def gattctl_list(private_bus):
    out = run_gattctl(private_bus, "list")
    assert out.returncode == 0, out.stderr
    return {line.split()[0]: line for line in out.stdout.splitlines()}


def test_gattctl_list_shows_the_sockets_bluetoothd_holds(gattd, standin, manager, private_bus):
    """What an administrator checks: which characteristics run on the socket path, and with
    how many centrals (one socket each on 5.76+)."""
    standin.call("SetAcquireMode", "per-device")
    stream = path_of(standin, STREAM)
    assert {k: (int(e["NotifySockets"]), int(e["WriteSockets"])) for k, e in listed(manager).items()
            if k in ("stream", "cmd", "plain")} == {"stream": (0, 0), "cmd": (0, 0), "plain": (0, 0)}
    standin.call("Subscribe", stream, DEVICE)
    standin.call("Subscribe", stream, DEVICE2)
    assert wait_sockets(standin, stream, "notify", 2) == 2
    write(standin, CMD, b"\x11", device=DEVICE)
    assert wait_sockets(standin, path_of(standin, CMD), "write", 1) == 1
    entries = listed(manager)
    assert (int(entries["stream"]["NotifySockets"]), int(entries["stream"]["WriteSockets"])) == (2, 0)
    assert (int(entries["cmd"]["NotifySockets"]), int(entries["cmd"]["WriteSockets"])) == (0, 1)
    assert (int(entries["plain"]["NotifySockets"]), int(entries["plain"]["WriteSockets"])) == (0, 0)
    lines = gattctl_list(private_bus)
    assert "subscribed,notify-socket=2" in lines["stream"], lines["stream"]
    assert "write-socket" in lines["cmd"] and "notify-socket" not in lines["cmd"], lines["cmd"]
    assert "socket" not in lines["plain"], lines["plain"]

    standin.call("Unsubscribe", stream, DEVICE)        # that central's socket closes
    assert gattd[0].child.wait_for_line("unsubscribed", 10)
    assert int(listed(manager)["stream"]["NotifySockets"]) == 1
    assert "subscribed,notify-socket " in gattctl_list(private_bus)["stream"] + " "


def events_until(w, last):
    """The JSON events `gattctl watch` printed, up to and including the first equal to `last`."""
    def parsed():
        out = []
        for line in list(w.out.lines):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out
    assert w.out.wait_for(lambda line: any(e == last for e in parsed()), 10) is not None, \
        "no %s; saw %s" % (last, parsed())
    seen = parsed()
    return seen[:seen.index(last) + 1]


def test_each_central_subscription_is_an_event(gattd, standin, private_bus):
    """CoreBluetooth's didSubscribe(central:)/didUnsubscribe: with a socket per central (5.76+)
    a program hears which central came and went, inside the characteristic's own events."""
    standin.call("SetAcquireMode", "per-device")
    stream = path_of(standin, STREAM)
    w = watch_events(private_bus)
    try:
        # One step at a time: gattd sees two hang-ups that arrive together in descriptor order.
        for action, device, heard in (("Subscribe", DEVICE, "central-subscribed"),
                                      ("Subscribe", DEVICE2, "central-subscribed"),
                                      ("Unsubscribe", DEVICE, "central-unsubscribed"),
                                      ("Unsubscribe", DEVICE2, "central-unsubscribed")):
            standin.call(action, stream, device)
            events_until(w, {"event": heard, "id": "stream", "device": device})
        seen = [e for e in events_until(w, {"event": "unsubscribed", "id": "stream"}) if e.get("id") == "stream"]
        assert seen == [
            {"event": "subscribed", "id": "stream"},
            {"event": "central-subscribed", "id": "stream", "device": DEVICE},
            {"event": "central-subscribed", "id": "stream", "device": DEVICE2},
            {"event": "central-unsubscribed", "id": "stream", "device": DEVICE},
            {"event": "central-unsubscribed", "id": "stream", "device": DEVICE2},
            {"event": "unsubscribed", "id": "stream"},
        ], seen
    finally:
        w.stop()


def test_a_shared_socket_names_only_the_first_central(gattd, standin, private_bus):
    """bluetoothd 5.66 acquires one socket for every subscriber, naming the first."""
    standin.call("SetAcquireMode", "shared")
    stream = path_of(standin, STREAM)
    w = watch_events(private_bus)
    try:
        standin.call("Subscribe", stream, DEVICE)
        # The socket first: a last unsubscribe that overtakes AcquireNotify's reply leaves
        # the socket open (bluetoothd 5.66 counts the subscriber only on the reply, and so
        # does the stand-in), and no unsubscribe would ever come.
        assert wait_sockets(standin, stream, "notify", 1) == 1
        standin.call("Subscribe", stream, DEVICE2)
        standin.call("Unsubscribe", stream, DEVICE)
        standin.call("Unsubscribe", stream, DEVICE2)     # the last one: bluetoothd closes the socket
        seen = [e for e in events_until(w, {"event": "unsubscribed", "id": "stream"}) if e.get("id") == "stream"]
        assert [e["event"] for e in seen] == ["subscribed", "central-subscribed", "central-unsubscribed", "unsubscribed"]
        assert {e.get("device") for e in seen if e["event"].startswith("central-")} == {DEVICE}
    finally:
        w.stop()


def test_only_bluetoothd_may_acquire(gattd, standin, private_bus, manager):
    _, owner = gattd
    stream = path_of(standin, STREAM)
    cmd = path_of(standin, CMD)
    conn = private_bus.connect()
    opts = dbus.Dictionary({"device": dbus.ObjectPath(DEVICE), "mtu": dbus.UInt16(23)}, signature="sv")
    for path, member in ((stream, "AcquireNotify"), (cmd, "AcquireWrite")):
        chrc = dbus.Interface(conn.get_object(owner, path, introspect=False), CHRC)
        with pytest.raises(dbus.exceptions.DBusException) as err:
            getattr(chrc, member)(opts)
        assert err.value.get_dbus_name() == "org.bluez.Error.NotAuthorized"
    assert not chrc_property(private_bus, owner, stream, "Notifying")
    # a characteristic that did not opt in has no such method
    plain = dbus.Interface(conn.get_object(owner, path_of(standin, PLAIN), introspect=False), CHRC)
    with pytest.raises(dbus.exceptions.DBusException) as err:
        plain.AcquireNotify(opts)
    assert err.value.get_dbus_name() in ("org.freedesktop.DBus.Error.UnknownMethod",
                                         "org.freedesktop.DBus.Error.AccessDenied")


def test_bluetoothd_restart_closes_sockets_and_subscribes_again(gattd, standin, manager, private_bus):
    import signal
    stream = path_of(standin, STREAM)
    w = watch_events(private_bus)
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, "notify", 1) == 1
    standin.restart(signal.SIGKILL)
    # the central that was subscribed is reported gone, and so is the subscription
    seen = events_until(w, {"event": "unsubscribed", "id": "stream"})
    w.stop()
    assert {"event": "central-unsubscribed", "id": "stream", "device": DEVICE} in seen, seen
    owner, _ = standin.call("WaitForApplication", WAIT_MS)
    stream = path_of(standin, STREAM)
    assert not chrc_property(private_bus, gattd[1], stream, "Notifying")
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, "notify", 1) == 1
    manager.SetValue("stream", dbus.ByteArray(b"\x09\x00\x00\x00"))
    assert bytes(standin.call("WaitForNotifications", stream, dbus.UInt32(1), WAIT_MS)[0]) == b"\x09\x00\x00\x00"


def test_a_bus_that_cannot_pass_descriptors_falls_back_to_signals(tmp_path, request):
    """On a TCP bus no descriptor can pass: gattd says so and uses signals and WriteValue."""
    bus = PrivateBus(tcp=True)
    assert bus.address.startswith("tcp:")
    standin = Standin(bus, log_path=str(tmp_path / "standin.log"))
    g = Gattd(bus, os.path.join(CONFIGS, "sockets.json"), str(tmp_path / "gattd.log"), str(tmp_path / "state"))
    try:
        standin.call("WaitForApplication", WAIT_MS)
        assert g.child.wait_for_line("cannot pass file descriptors", 10)
        assert all(len(a["acquire"]) == 0 for a in standin.call("Attributes") if a["kind"] == "characteristic")
        ticker = path_of(standin, TICKER)
        standin.call("Subscribe", ticker, DEVICE)
        standin.call("WaitForNotifications", ticker, dbus.UInt32(3), WAIT_MS)
        assert set(standin.call("NotificationPaths", ticker)) == {"signal"}
        write(standin, CMD, b"\x42")
        assert read(standin, CMD) == b"\x42"
        assert list(standin.call("AcquireCalls")) == []
        assert g.alive()
    finally:
        g.stop()
        standin.stop()
        bus.stop()
        print_on_failure(request, "gattd output", str(tmp_path / "gattd.log"))


def test_a_reload_that_leaves_the_service_alone_keeps_its_sockets(start_gattd, standin, private_bus, tmp_path):
    """One application per service: a reload that adds another service leaves this one
    registered, and bluetoothd goes on using the sockets it acquired (it would not acquire
    them again for a central already subscribed)."""
    config = tmp_path / "sockets.json"
    definition = json.load(open(os.path.join(CONFIGS, "sockets.json")))
    config.write_text(json.dumps(definition))
    g = start_gattd(str(config))
    standin.call("WaitForApplication", WAIT_MS)
    assert g.child.wait_for_line("control API ready", 10)
    stream, cmd = path_of(standin, STREAM), path_of(standin, CMD)
    standin.call("Subscribe", stream, DEVICE)
    assert wait_sockets(standin, stream, "notify", 1) == 1
    write(standin, CMD, b"\x01")
    assert wait_sockets(standin, cmd, "write", 1) == 1

    definition["services"].append({"id": "other", "uuid": "12345678-1234-5678-1234-56789abc9000",
                                   "characteristics": [{"id": "other-value", "uuid": "12345678-1234-5678-1234-56789abc9001",
                                                        "flags": ["read"], "value": {"utf8": "other"}}]})
    config.write_text(json.dumps(definition))
    g.child.proc.send_signal(signal.SIGHUP)
    assert len(standin.call("WaitForApplications", dbus.UInt32(2), WAIT_MS)) == 2
    assert g.child.wait_for_line("applications=2", 10)

    manager = dbus.Interface(private_bus.connect().get_object("org.gattd", "/org/gattd"), "org.gattd.Manager1")
    manager.SetValue("stream", dbus.ByteArray(struct.pack("<I", 7)))
    values = standin.call("WaitForNotifications", stream, dbus.UInt32(1), WAIT_MS)
    assert struct.unpack("<I", bytes(values[-1]))[0] == 7
    assert set(standin.call("NotificationPaths", stream)) == {"socket"}
    write(standin, CMD, b"\x02")
    assert read(standin, CMD) == b"\x02"
    assert [str(m) for m, p, _ in standin.call("AcquireCalls") if str(p) in (stream, cmd)] == [
        "AcquireNotify", "AcquireWrite"], "bluetoothd had to acquire a socket again"
    assert "dropped (UnregisterApplication)" not in "\n".join(str(line) for line in standin.call("Log"))
