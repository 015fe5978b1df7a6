"""gattd's command line: what a user typing it sees (no bus needed)."""
import os
import subprocess


from conftest import gattd_binary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args):
    return subprocess.run([gattd_binary(), *args], capture_output=True, text=True, timeout=30)


def test_help_lists_every_option_and_exit_status():
    result = run("--help")
    assert result.returncode == 0
    for option in ("--config", "--adapter", "--state-dir", "--log-level", "--check", "--version"):
        assert option in result.stdout
    assert "78 (EX_CONFIG)" in result.stdout


def test_unknown_option_is_a_usage_error():
    result = run("--confg", "x.json")
    assert result.returncode == 64
    assert 'unknown argument "--confg"' in result.stderr


def test_option_without_its_value_is_a_usage_error():
    result = run("--config")
    assert result.returncode == 64
    assert "--config needs a value" in result.stderr


def test_unknown_log_level_is_a_usage_error():
    result = run("--config", os.path.join(ROOT, "config", "example.json"), "--log-level", "loud")
    assert result.returncode == 64
    assert 'unknown log level "loud"' in result.stderr


def test_check_accepts_equals_form_and_prints_a_summary():
    result = run("--check", "--config=" + os.path.join(ROOT, "config", "example.json"))
    assert result.returncode == 0
    assert "2 services, 3 characteristics" in result.stdout


def test_version():
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("gattd ")


def test_check_reports_every_problem_at_once_with_its_position(tmp_path):
    import subprocess
    from conftest import gattd_binary
    config = tmp_path / "mixed.json"
    config.write_text('{\n  "version": 1,\n  "services": [\n    {"id": "s", "uuid": "180F", "characteristics": [\n'
                      '      {"id": "a", "uuid": "2A19", "flags": ["read", "wrte"], "minLength": 4, "maxLength": 2}\n'
                      '    ]}\n  ]\n}\n')
    out = subprocess.run([gattd_binary(), "--check", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 78
    lines = out.stderr.splitlines()
    assert lines == [
        '%s:5:53: services[0].characteristics[0].flags[1]: unknown flag "wrte" (did you mean "write"?)' % config,
        "%s:5:75: services[0].characteristics[0].minLength: minLength 4 is greater than maxLength 2" % config,
        "%s: 2 errors; nothing was started" % config,
    ], lines


def test_check_tells_what_will_happen(tmp_path):
    """--check on a definition that passes but would surprise: each surprise is a warning
    naming its place, and each characteristic says where its value comes from and who
    decides its writes."""
    import json
    # There, not executable, and in no directory the unit's sandbox hides: the checkout itself may
    # be under /tmp or /root, where the sandbox warning would come first.
    plain = "/etc/passwd"
    assert os.path.isfile(plain) and os.stat(plain).st_mode & 0o111 == 0
    config = tmp_path / "surprises.json"
    config.write_text(json.dumps({"version": 1, "services": [{"id": "s", "uuid": "181A", "characteristics": [
        {"id": "temp", "uuid": "2A6E", "flags": ["read", "notify"], "value": {"int16": 0}, "minLength": 2,
         "maxLength": 2, "update": {"everyMs": 1000, "source": {"random": {"min": 0, "max": 40}}}},
        {"id": "setpoint", "uuid": "2A6F", "flags": ["read", "write"], "value": {"int16": 2100}, "minLength": 2,
         "maxLength": 2, "accept": {"min": 1000, "max": 3000},
         "onWrite": {"argv": ["/home/pi/on-setpoint.sh"]}},
        {"id": "mode", "uuid": "2A70", "flags": ["write"], "value": {"uint8": 0},
         "onWrite": {"argv": [plain], "decides": True}},
    ]}]}))
    result = run("--check", "--config", str(config))
    assert result.returncode == 0, result.stderr
    warnings = result.stderr.splitlines()
    expected = [
        "services[0].characteristics[0].update: each update is 1 byte(s) (uint8, the default encode), outside "
        "minLength...maxLength 2...2",
        "services[0].characteristics[0].update: updates run only while a central is subscribed",
        "services[0].characteristics[1].onWrite: hook /home/pi/on-setpoint.sh is hidden from the service "
        "(ProtectHome=yes in gattd.service)",
        "services[0].characteristics[2].onWrite: hook %s is not executable" % plain,
        "no advertisement: phones will not find it",
    ]
    for text in expected:
        assert any(text in line and "warning: " in line for line in warnings), (text, warnings)
    assert len(warnings) == len(expected), warnings
    out = result.stdout
    assert "      value: initially 2 byte(s); every 1000 ms from random numbers as uint8, only while a central is " \
           "subscribed\n      reads: the stored value\n" in out, out
    assert "      writes: length 2...2 (else 0x0d) -> accept int16 1000...3000, else 0x80 -> stored, then hook " \
           "/home/pi/on-setpoint.sh runs\n" in out, out
    assert "      writes: length 0...512 (else 0x0d) -> hook %s decides (exit 0 accepts, 1000 ms) -> stored\n" % plain in out, out


def test_check_points_a_range_to_accept():
    """A user who writes "min"/"max" on a characteristic is told about accept, and about hooks
    and handlers for anything more; not "did you mean id"."""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json") as config:
        config.write('{"version": 1, "services": [{"uuid": "181A", "characteristics": [{"uuid": "2A6F", '
                     '"flags": ["read", "write"], "value": {"int16": 2100}, "min": 1000, "max": 3000}]}]}')
        config.flush()
        result = run("--check", "--config", config.name)
    assert result.returncode == 78
    assert 'did you mean "id"' not in result.stderr
    for key in ("min", "max"):
        assert ('services[0].characteristics[0].%s: unknown key "%s": the values a central may write are given by '
                '"accept", e.g. "accept": {"min": 10, "max": 30}' % (key, key)) in result.stderr, result.stderr
    assert '"onWrite" hook with "decides": true or a program\'s handler' in result.stderr
