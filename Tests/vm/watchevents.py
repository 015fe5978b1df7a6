# SPDX-License-Identifier: MIT
"""gattd's events as a scenario's `gattctl watch --json` writes them to a file, and what a
program that knows centrals only from those events sees: shared by privacy.py (BlueZ's
central) and bumble_central.py (Bumble's), which run under different Pythons, so this
module needs nothing beyond the standard library."""

import json


def read_events(path):
    """Every whole JSON line of the file, in order (a line being written is left out)."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def unannounced(events):
    """The first event that names a central by an address no earlier event announced
    (`connected`, or `address-changed` to it), as (what was expected, the event); None when
    a program following the events met only addresses it was told."""
    known = set()
    for event in events:
        kind = event.get('event')
        if kind == 'connected':
            known.add(event['address'])
        elif kind == 'address-changed':
            if event['old-address'] not in known:
                return 'address-changed from an announced address', event
            known.discard(event['old-address'])
            known.add(event['address'])
        elif kind == 'disconnected':
            if event['address'] not in known:
                return 'disconnected to name an announced address', event
            known.discard(event['address'])
        elif kind == 'written' and event.get('address') and event['address'] not in known:
            return 'a write to name an announced address', event
    return None
