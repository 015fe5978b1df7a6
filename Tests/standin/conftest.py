# SPDX-License-Identifier: MIT
"""Fixtures for the stand-in's own tests: a private bus and a fresh stand-in per test."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fixtures import private_bus, pytest_runtest_makereport, standin  # noqa: E402,F401
