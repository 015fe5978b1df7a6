# SPDX-License-Identifier: MIT
"""pytest fixtures shared by the stand-in's own tests and the integration suite: a
private bus and a fresh stand-in per test, with the stand-in's log printed on failure.
Each conftest imports them (importing a fixture into a conftest registers it)."""

import os

import pytest

from harness import PrivateBus, Standin


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
