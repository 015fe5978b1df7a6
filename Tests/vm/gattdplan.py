# SPDX-License-Identifier: MIT
"""The gattd plan: checks derived from gattd's JSON configuration."""
from bluezcentral import CheckFailed


def gattd_plan(args):
    raise CheckFailed('gattd plan not written yet')
