# SPDX-License-Identifier: MIT
"""The Python library's L2CAP channel takers (`Peripheral.on_channel`, `take_channel`,
docs/python.md "L2CAP channels") against a real gattd and the stand-in bluetoothd.

This host's kernel has no AF_BLUETOOTH, so gattd runs with `fake_l2cap.c` preloaded: a
stand-in for the kernel's LE L2CAP sockets (AF_UNIX SOCK_SEQPACKET underneath, one SDU per
message as on a channel) that shares no code with gattd. A test "central" connects to the
listener gattd made for PSM 0x90 (channels.json's "log"). gattd listens there only while a
taker is registered: otherwise the address stays bound and not listening, and the
central's connect fails with ECONNREFUSED (the kernel's "PSM not supported"). While it
listens, the channel is connected as it arrives; gattd asks the taker
(org.gattd.ChannelTaker1.Open with the descriptor), and a refusal is gattd closing the open
channel: the central reads end of file, and gattd logs `channel refused:` with the cause.
Everything between gattd and the program (the bus, the
descriptor passing, the taker object, its registration and gattd's watch on it) is real.
The kernel side of channels is tested in the guest (Tests/vm/scenarios/gattd-channels.sh).
"""

import asyncio
import errno
import json
import logging
import os
import shutil
import signal
import socket
import subprocess

import dbus
import pytest

import gattd

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = "00:11:22:33:44:55"
PSM = 0x90


@pytest.fixture(scope="session")
def fake_l2cap(tmp_path_factory):
    """fake_l2cap.c built for this run (the C compiler Debian's build-essential gives)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.fail("no C compiler (cc) to build Tests/integration/fake_l2cap.c", pytrace=False)
    out = str(tmp_path_factory.mktemp("fake-l2cap") / "fake_l2cap.so")
    subprocess.run([cc, "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-O1", "-o", out,
                    os.path.join(HERE, "fake_l2cap.c"), "-ldl"], check=True, timeout=120)
    return out


@pytest.fixture
def channel_gattd(start_gattd, standin, fake_l2cap, tmp_path):
    """channel_gattd() -> (Gattd, name): gattd serving channels.json with the fake L2CAP;
    `name` is its listeners' namespace (one per test). Call again to restart it."""
    name = "%d-%s" % (os.getpid(), tmp_path.name)
    env = {"LD_PRELOAD": fake_l2cap, "FAKE_L2CAP_NAME": name, "FAKE_L2CAP_PEER": PEER, "FAKE_L2CAP_SNDMTU": "100"}
    if os.environ.get("ASAN_OPTIONS"):  # make test-asan: its runtime need not come first
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":verify_asan_link_order=0"

    def start():
        g = start_gattd("channels.json", env=env)
        standin.call("WaitForApplication", dbus.UInt32(10000))
        assert g.child.wait_for_line("control API ready", 10), "gattd did not take org.gattd"
        assert g.child.wait_for_line("channel listening", 10), "the fake L2CAP did not listen"
        return g
    return start, name


def run(coroutine, within=60):
    return asyncio.run(asyncio.wait_for(coroutine, within))


def peripheral(private_bus, **options):
    return gattd.Peripheral(bus_address=private_bus.address, **options)


class Central:
    """The central's end of one channel (blocking, bounded by a timeout)."""

    def __init__(self, name, psm=PSM):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(10)
        self.sock.connect("\0gattd-fake-l2cap/%s/0x%x" % (name, psm))

    def send(self, data):
        self.sock.send(data)

    def recv(self):
        return self.sock.recv(70000)

    def close(self):
        self.sock.close()


async def open_central(name):
    return await asyncio.to_thread(Central, name)


async def exchange(central, *sdus):
    """Sends each SDU and reads one answer per SDU."""
    answers = []
    for sdu in sdus:
        await asyncio.to_thread(central.send, sdu)
        answers.append(await asyncio.to_thread(central.recv))
    return answers


def new_line(g, text, since, timeout=10):
    """The first line of gattd's output after its first `since` lines that contains `text`."""
    return g.child.out.wait_for(lambda line: text in line, timeout, since)


def logged(g):
    """How many lines gattd has written so far (for new_line)."""
    with g.child.out.changed:
        return len(g.child.out.lines)


async def wait_line(g, text, since=0, timeout=10):
    line = await asyncio.to_thread(new_line, g, text, since, timeout)
    assert line is not None, "gattd did not log %r" % text
    return line


async def refused(g, name, cause):
    """A central's open is refused after the kernel accepted it: end of file for it, a new
    `channel refused: <cause>` in gattd's log."""
    since = logged(g)
    central = await open_central(name)
    assert await asyncio.to_thread(central.recv) == b"", "refused: the central reads end of file"
    central.close()
    return await wait_line(g, "channel refused: " + cause, since)


def fake_address(name, psm=PSM):
    return "\0gattd-fake-l2cap/%s/0x%x" % (name, psm)


async def not_listening(g, name, since):
    """No taker: the central's connect is refused at once (ECONNREFUSED, the kernel's "PSM
    not supported"), gattd hears nothing of it, and the PSM stays gattd's (another bind of
    it fails)."""
    with pytest.raises(ConnectionRefusedError):
        await open_central(name)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with pytest.raises(OSError) as taken:
        other.bind(fake_address(name))
    other.close()
    assert taken.value.errno == errno.EADDRINUSE, "gattd holds the PSM while it does not listen"
    # gattd had no channel to refuse (its log so far).
    with g.child.out.changed:
        assert not [line for line in g.child.out.lines[since:] if "channel refused" in line], "gattd saw no channel"


async def echo(sock, request):
    loop = asyncio.get_running_loop()
    while data := await loop.sock_recv(sock, request.receive_mtu):
        await loop.sock_sendall(sock, data)


@pytest.mark.preload
def test_a_taker_echoes_and_gets_the_central_and_the_socket(channel_gattd, private_bus):
    start, name = channel_gattd
    g = start()
    requests, kinds = [], []

    async def body():
        async with peripheral(private_bus) as app:
            events = app.events()
            await app.subscribe()

            @app.on_channel("log")
            async def log_channel(sock, request):
                requests.append(request)
                kinds.append((sock.type, sock.getblocking()))
                await echo(sock, request)
            await app.wait_started(10)
            await app.register()
            central = await open_central(name)
            full = bytes(range(100))  # the central's MTU (FAKE_L2CAP_SNDMTU)
            assert await exchange(central, b"hello", full, b"x") == [b"hello", full, b"x"], \
                "one SDU each way, boundaries kept"
            opened = await events.next(gattd.ChannelOpened, timeout=10, channel="log")
            assert opened.address == PEER and opened.info["TakenBy"] == "taker"
            central.close()
            request = requests[0]
            assert (request.channel, request.psm, request.address, request.address_type) == ("log", PSM, PEER, "public")
            assert request.receive_mtu == 65535 and request.serial >= 1
            assert kinds == [(socket.SOCK_SEQPACKET, False)]
            listed = {c["Id"]: c for c in await app.channels()}
            assert listed["log"]["Taker"].endswith(" /org/gattd/program/channel/log")
            assert listed["log"]["PSM"] == PSM and listed["log"]["Listening"] is True
            # Two at once: each connection is its own socket and task.
            first, second = await open_central(name), await open_central(name)
            assert await exchange(second, b"two") == [b"two"]
            assert await exchange(first, b"one") == [b"one"]
            first.close()
            second.close()
    run(body())
    assert len(requests) == 3 and len({r.serial for r in requests}) == 3


@pytest.mark.preload
def test_a_taker_that_raises_closes_only_its_channel(channel_gattd, private_bus, caplog):
    start, name = channel_gattd
    g = start()
    caplog.set_level(logging.ERROR, logger="gattd")

    async def body():
        async with peripheral(private_bus) as app:
            async def flaky(sock, request):
                data = await asyncio.get_running_loop().sock_recv(sock, request.receive_mtu)
                if data == b"boom":
                    raise RuntimeError("the taker broke")
                await asyncio.get_running_loop().sock_sendall(sock, data)
                await echo(sock, request)
            await app.take_channel("log", flaky)
            central = await open_central(name)
            await asyncio.to_thread(central.send, b"boom")
            assert await asyncio.to_thread(central.recv) == b"", "the library closes the channel"
            central.close()
            assert "taker of channel log failed; the channel is closed" in caplog.text
            assert "RuntimeError: the taker broke" in caplog.text
            # Still registered: the next connection is served.
            central = await open_central(name)
            assert await exchange(central, b"fine", b"again") == [b"fine", b"again"]
            central.close()
    run(body())


@pytest.mark.preload
def test_a_decider_refuses_and_one_that_raises_refuses_too(channel_gattd, private_bus, caplog):
    start, name = channel_gattd
    g = start()
    verdicts = iter([False, RuntimeError("the decider broke"), True])
    seen = []

    async def decide(request):
        seen.append(request.address)
        verdict = next(verdicts)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    async def body():
        async with peripheral(private_bus) as app:
            await app.take_channel("log", echo, accept=decide)
            await refused(g, name, "the taker declined it: org.gattd.Error.Failed: the program refused the connection")
            await refused(g, name, "the taker declined it: org.gattd.Error.Failed: RuntimeError: the decider broke")
            central = await open_central(name)
            assert await exchange(central, b"yes") == [b"yes"]
            central.close()
    run(body())
    assert seen == [PEER] * 3
    assert "accepting a connection on channel log failed; it is refused" in caplog.text


@pytest.mark.preload
def test_a_taker_that_leaves_and_gattd_restarting(channel_gattd, private_bus):
    """Unregistered, or gone from the bus: gattd refuses again. gattd restarting: the
    program registers again by itself."""
    start, name = channel_gattd
    g = start()

    async def body():
        # Nothing registered: not listening (fail closed), the PSM held.
        assert g.child.wait_for_line("channel's PSM held; it listens while a program has registered", 10)
        await not_listening(g, name, 0)
        async with peripheral(private_bus) as app:
            events = app.events()
            await app.take_channel("log", echo)
            central = await open_central(name)
            assert await exchange(central, b"a") == [b"a"]
            # One taker per channel.
            async with peripheral(private_bus, handler_path="/other") as other:
                with pytest.raises(gattd.AlreadyClaimed) as claimed:
                    await other.take_channel("log", echo)
                assert claimed.value.name == "org.gattd.Error.AlreadyClaimed"
                with pytest.raises(gattd.NotRegistered):
                    await other.release_channel("log")
            since = logged(g)
            await app.release_channel("log")
            # UnregisterChannel's reply comes after gattd stopped listening.
            await wait_line(g, "channel not listening: no program takes it", since)
            await not_listening(g, name, since)
            assert await exchange(central, b"b") == [b"b"], "a channel already taken stays open"
            central.close()
            await app.take_channel("log", echo)
            # gattd restarts: the program takes the channel again by itself.
            await asyncio.to_thread(g.stop)
            await events.next(gattd.GattdStopped, timeout=10)
            g2 = await asyncio.to_thread(start)
            await events.next(gattd.GattdStarted, timeout=10)
            central = await open_central(name)
            assert await exchange(central, b"after restart") == [b"after restart"]
            central.close()
            return g2

    g2 = run(body())
    # The program left (close() unregisters): not listening again.
    run(not_listening(g2, name, logged(g2)))

    async def leaves_the_bus():
        app = peripheral(private_bus)
        await app.connect()
        await app.take_channel("log", echo)
        since = logged(g2)
        app._bus.disconnect()  # gone without UnregisterChannel, as a program that crashes
        line = await wait_line(g2, "channel taker gone; its channel no longer listens", since)
        assert "left the bus" in line, line
        await not_listening(g2, name, since)
    run(leaves_the_bus())


@pytest.mark.preload
def test_registration_refused_for_a_channel_gattd_cannot_give(channel_gattd, private_bus):
    start, name = channel_gattd
    start()

    async def body():
        async with peripheral(private_bus) as app:
            with pytest.raises(gattd.Failed) as unknown:
                await app.take_channel("nosuch", echo)
            assert unknown.value.name == "org.gattd.Error.Failed"
            assert unknown.value.message == 'no channel "nosuch" in the definition'
            with pytest.raises(gattd.Failed) as program:
                await app.take_channel("firmware", echo)
            assert program.value.message == 'channel "firmware" runs its program cat for each connection'
            with pytest.raises(ValueError):
                await app.take_channel("", echo)
            assert app._channels == {}, "nothing declared after a refusal"
        # Declared before connecting: serve() raises what gattd refused.
        app = peripheral(private_bus)

        @app.on_channel("nosuch")
        def never(sock, request):
            raise AssertionError("not called")
        with pytest.raises(gattd.Failed) as served:
            await app.serve()
        assert 'no channel "nosuch"' in served.value.message
        await app.close()
    run(body())


def test_without_bluetooth_the_channel_is_refused_to_a_taker(start_gattd, standin, private_bus):
    """No fake: this host's gattd cannot listen, and says so to the program."""
    g = start_gattd("channels.json")
    standin.call("WaitForApplication", dbus.UInt32(10000))
    assert g.child.wait_for_line("control API ready", 10)

    async def body():
        async with peripheral(private_bus) as app:
            try:
                socket.socket(31, socket.SOCK_SEQPACKET, 0).close()
            except OSError:
                with pytest.raises(gattd.Failed) as failed:
                    await app.take_channel("log", echo)
                assert failed.value.message == 'channel "log" does not listen (see gattd\'s log or gattd --doctor)'
            else:  # a host with Bluetooth: it listens and takes the taker
                await app.take_channel("log", echo)
    run(body())


@pytest.mark.preload
def test_program_channels_listen_always_and_one_that_cannot_start_is_closed(
        start_gattd, standin, fake_l2cap, tmp_path):
    """A channel with a `program` listens from the start (no taker involved); one whose
    program cannot start is warned about at the start and at a reload, and each channel
    to it is accepted by the kernel and closed by gattd at once, with the cause logged."""
    name = "%d-%s" % (os.getpid(), tmp_path.name)
    config = tmp_path / "programs.json"
    config.write_text(json.dumps({
        "version": 1,
        "services": [
            {"id": "a", "uuid": "FE59", "characteristics": [{"id": "x", "uuid": "2A19", "flags": ["read"],
                                                             "value": {"uint8": 1}}]},
            {"id": "b", "uuid": "FE5A", "characteristics": [{"id": "y", "uuid": "2A1A", "flags": ["read"],
                                                             "value": {"uint8": 2}}]}],
        "channels": [
            {"id": "echo", "psm": "0x91", "service": "a", "program": {"argv": ["cat"]}},
            {"id": "broken", "psm": "0x93", "service": "b", "program": {"argv": ["/nonexistent/channel-program"]}}]}))
    env = {"LD_PRELOAD": fake_l2cap, "FAKE_L2CAP_NAME": name, "FAKE_L2CAP_PEER": PEER, "FAKE_L2CAP_SNDMTU": "100"}
    if os.environ.get("ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":verify_asan_link_order=0"
    g = start_gattd(str(config), env=env)
    standin.call("WaitForApplication", dbus.UInt32(10000))
    warned = g.child.wait_for_line("channel's program cannot start", 10)
    assert warned is not None and "channel=broken" in warned, warned
    assert g.child.wait_for_line("channel listening", 10)

    async def body():
        central = await asyncio.to_thread(Central, name, 0x91)
        await asyncio.to_thread(central.send, b"hello\n")
        assert await asyncio.to_thread(central.recv) == b"hello\n", "listening with no taker registered"
        central.close()
        since = logged(g)
        broken = await asyncio.to_thread(Central, name, 0x93)
        assert await asyncio.to_thread(broken.recv) == b"", "gattd closes the channel at once"
        broken.close()
        line = await wait_line(g, "channel refused: its program cannot start", since)
        assert "channel=broken" in line and "address=" + PEER in line, line
        # A reload checks again.
        since = logged(g)
        g.child.proc.send_signal(signal.SIGHUP)
        again = await wait_line(g, "channel's program cannot start", since)
        assert "channel=broken" in again, again
    run(body())
