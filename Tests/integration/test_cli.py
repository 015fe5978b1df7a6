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
