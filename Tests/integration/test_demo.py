# SPDX-License-Identifier: MIT
"""`make demo-standin` (scripts/demo-standin): it keeps saved values in a directory of its
own and leaves nothing behind, so a second run starts from the definition again; and it
checks what it writes."""

import json
import os
import re
import subprocess

from conftest import REPO, gattd_binary

DEMO = os.path.join(REPO, "scripts", "demo-standin")


def demo(config):
    out = subprocess.run([DEMO, config], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, GATTD_BIN=gattd_binary()))
    return out.returncode, out.stdout + out.stderr


def test_demo_uses_its_own_state_and_a_second_run_starts_fresh():
    example = os.path.join(REPO, "config", "example.json")
    for run in (1, 2):
        code, text = demo(example)
        assert code == 0, text
        assert "read device-label: 68 65 6c 6c 6f" in text, "run %d read the definition's value:\n%s" % (run, text)
        assert "wrote device-label: 68 69, read back 68 69" in text
        state = re.search(r"gattd's saved values: (\S+) \(removed at exit\)", text)
        assert state, text
        assert not state.group(1).startswith("/var/lib/gattd"), state.group(1)
        assert not os.path.exists(os.path.dirname(state.group(1))), "the demo left its state behind"
    assert "Failed to set fd limit" not in text, "dbus-daemon's noise stays out of what a user reads"


def test_demo_writes_what_the_characteristic_takes_and_checks_it(tmp_path):
    config = tmp_path / "two-bytes.json"
    config.write_text(json.dumps({"version": 1, "services": [{
        "id": "svc", "uuid": "12345678-1234-5678-1234-56789abcd000", "characteristics": [{
            "id": "pair", "uuid": "12345678-1234-5678-1234-56789abcd001", "flags": ["read", "write", "notify"],
            "value": {"hex": "0000"}, "minLength": 2, "maxLength": 2}]}]}))
    code, text = demo(str(config))
    assert code == 0, text
    assert "wrote pair: 68 69, read back 68 69" in text
    assert "notification: pair = 2a 2a" in text
    assert "time" not in text.split("notification:")[1].split("\n")[0], "no misleading time-out"
