# SPDX-License-Identifier: MIT
"""Fixtures for the stand-in's own tests: a private bus and a fresh stand-in per test."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import PrivateBus, Standin  # noqa: E402


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
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        with open(log_path) as f:
            print("---- stand-in log ----\n" + f.read())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
