"""The one settings object: typed values read when they are read, clear refusals naming the
variable, and docs/configuration.md's table in step with it both ways."""

from __future__ import annotations

import ipaddress
import re
import subprocess
import sys
from pathlib import Path

import pytest

from services.core.config import Settings, get_settings
from services.core.errors import SettingError, ValidationError

ROOT = Path(__file__).resolve().parents[4]


def test_defaults_are_typed() -> None:
    settings = get_settings()
    assert settings.limit_n == 8 and isinstance(settings.limit_n, int)
    assert settings.session_hours == 12.0
    assert settings.allow_commands is False
    assert settings.trusted_proxies == ()
    assert settings.local_engines is None
    assert isinstance(settings.data_dir, Path) and settings.data_dir.is_absolute()
    assert settings.database_url == f"sqlite:///{settings.data_dir / 'shootout.db'}"


def test_values_are_read_at_call_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = get_settings()
    monkeypatch.setenv("SHOOTOUT_LIMIT_N", "3")
    assert settings.limit_n == 3
    monkeypatch.setenv("SHOOTOUT_LIMIT_N", "5")
    assert settings.limit_n == 5
    monkeypatch.delenv("SHOOTOUT_LIMIT_N")
    assert settings.limit_n == 8
    # A derived default follows the setting it derives from.
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(tmp_path))
    assert settings.database_url == f"sqlite:///{tmp_path.resolve() / 'shootout.db'}"


def test_lists_flags_and_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOOTOUT_TRUSTED_PROXIES", "10.0.0.5, 10.1.0.0/16")
    monkeypatch.setenv("SHOOTOUT_ALLOWED_HOSTS", "Shootout.Example, ,other")
    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", "LlamaCpp,vllm")
    monkeypatch.setenv("SHOOTOUT_ALLOW_COMMANDS", " 1 ")
    monkeypatch.setenv("SHOOTOUT_NO_AUTOREFRESH", "yes")
    settings = get_settings()
    assert settings.trusted_proxies == (
        ipaddress.ip_network("10.0.0.5"),
        ipaddress.ip_network("10.1.0.0/16"),
    )
    assert settings.allowed_hosts == ("shootout.example", "other")
    assert settings.local_engines == ("llamacpp", "vllm")
    assert settings.allow_commands is True
    assert settings.autorefresh is False
    monkeypatch.setenv("SHOOTOUT_LOCAL_ENGINES", "all")
    assert settings.local_engines is None


def test_the_older_password_name_still_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOOTOUT_VIEWER_PASSWORD", raising=False)
    monkeypatch.setenv("SHOOTOUT_PASSWORD", "old")
    assert get_settings().viewer_password == "old"
    monkeypatch.setenv("SHOOTOUT_VIEWER_PASSWORD", "new")
    assert get_settings().viewer_password == "new"


@pytest.mark.parametrize(
    ("name", "value", "expects"),
    [
        ("SHOOTOUT_LIMIT_N", "abc", "a whole number of at least 1"),
        ("SHOOTOUT_LIMIT_IMPORT_MB", "-5", "a whole number of at least 1"),
        ("SHOOTOUT_LOCAL_PORT_BASE", "70000", "a whole number from 1 to 65535"),
        ("SHOOTOUT_SESSION_HOURS", "-1", "a number of hours above 0"),
        ("SHOOTOUT_HEADER_TIMEOUT_S", "soon", "a number of seconds above 0"),
        ("SHOOTOUT_ALLOW_COMMANDS", "true", "1 (on), or 0 (off)"),
        ("SHOOTOUT_TRUSTED_PROXIES", "10.0.0.5,proxy.local", "'proxy.local' is neither"),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_expects(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, expects: str
) -> None:
    monkeypatch.setenv(name, value)
    attr = next(s.attr for s in Settings.fields() if s.env == name)
    with pytest.raises(SettingError, match=re.escape(f"{name}={value!r}")) as refused:
        getattr(get_settings(), attr)
    assert isinstance(refused.value, ValidationError) and expects in str(refused.value)
    with pytest.raises(SettingError, match=name):
        get_settings().check()


def test_settings_are_read_only() -> None:
    with pytest.raises(AttributeError, match="SHOOTOUT_LIMIT_N"):
        get_settings().limit_n = 3  # type: ignore[misc]  # the point: it may not be set


def test_the_check_command_prints_where_to_serve_or_refuses(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "SHOOTOUT_PORT": "8600", "PYTHONPATH": str(ROOT)}
    served = subprocess.run(
        [sys.executable, "-m", "services.core.config"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (served.returncode, served.stdout.split()) == (0, ["127.0.0.1", "8600"])
    refused = subprocess.run(
        [sys.executable, "-m", "services.core.config"],
        env={**env, "SHOOTOUT_LIMIT_N": "abc", "SHOOTOUT_PORT": "x"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2 and not refused.stdout
    assert "SHOOTOUT_LIMIT_N='abc'" in refused.stderr and "SHOOTOUT_PORT='x'" in refused.stderr
    assert "Traceback" not in refused.stderr


def _documented() -> set[str]:
    """The variables of the table under "## Every variable" in docs/configuration.md."""
    page = (ROOT / "docs" / "configuration.md").read_text()
    section = page.split("## Every variable", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(SHOOTOUT_[A-Z0-9_]+)` \|", section, re.MULTILINE))


def test_every_setting_is_in_the_table_and_every_row_is_a_setting() -> None:
    fields = {name for setting in Settings.fields() for name in setting.names}
    documented = _documented()
    assert len(fields) > 40, "the settings scan found too few: has Settings changed shape?"
    assert sorted(fields - documented) == [], "settings missing from docs/configuration.md"
    assert sorted(documented - fields) == [], "rows of docs/configuration.md that are no setting"


def test_every_setting_has_a_meaning() -> None:
    settings = Settings.fields()
    assert all(s.meaning and s.env.startswith("SHOOTOUT_") for s in settings)
    assert len({s.env for s in settings}) == len(settings)
