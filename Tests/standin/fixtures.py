# SPDX-License-Identifier: MIT
"""pytest fixtures and helpers shared by the stand-in's own tests and the integration
suite: a private bus and a fresh stand-in per test, with the stand-in's log printed on
failure; a central's reads and writes through the stand-in; editing a configuration;
waiting for a condition with a deadline. Each conftest imports the fixtures (importing a
fixture into a conftest registers it); test modules import the helpers."""

import json
import os
import time

import dbus
import pytest

from harness import DEVICE, PrivateBus, Standin, one_by_uuid

MTU = dbus.UInt16(23)


def path_of(standin, uuid):
    """The object path of the one attribute the stand-in holds with `uuid`."""
    return one_by_uuid(standin.call("Attributes"), uuid)["path"]


def read(standin, uuid, offset=0, mtu=MTU, device=DEVICE):
    """A central's read of `uuid` through the stand-in; the value as bytes."""
    return bytes(standin.call("Read", path_of(standin, uuid), dbus.UInt16(offset), mtu, device))


def write(standin, uuid, value, offset=0, mtu=MTU, device=DEVICE):
    """A central's write request to `uuid` through the stand-in (raises on an ATT error)."""
    standin.call("Write", path_of(standin, uuid), dbus.ByteArray(value), dbus.UInt16(offset), mtu, device, False)


def edit_config(path, change):
    """Loads the JSON configuration at `path`, applies `change(document)`, writes it back."""
    with open(path) as f:
        document = json.load(f)
    change(document)
    with open(path, "w") as f:
        json.dump(document, f, indent=1)


def wait_until(condition, timeout, what):
    """Polls `condition` (a D-Bus round trip or a file check) until true or the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out after %.1f s waiting for %s" % (timeout, what)
        time.sleep(0.005)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def print_on_failure(request, title, path):
    """Prints the file at `path` under `title` when the test's call phase failed."""
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed and os.path.exists(path):
        with open(path) as f:
            print("---- %s ----\n%s" % (title, f.read()))


@pytest.fixture
def private_bus():
    bus = PrivateBus()
    yield bus
    bus.stop()


@pytest.fixture
def standin(private_bus, tmp_path, request):
    log_path = str(tmp_path / "standin.log")
    sd = Standin(private_bus, log_path=log_path)
    yield sd
    sd.stop()
    print_on_failure(request, "stand-in log", log_path)
