"""The headless CLI: JSON output, exit codes, one clear line on failure (no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "cli.py", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_help_lists_every_command() -> None:
    result = cli("--help")
    assert result.returncode == 0
    for command in (
        "engines",
        "local",
        "bench",
        "scrape",
        "history",
        "export",
        "import",
        "plan",
        "demo",
        "ask",
    ):
        assert command in result.stdout


def test_every_commands_help_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats help with %: one bare % in a help text made `bench --help` a traceback."""
    import argparse

    from cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert commands.choices
    for name, sub in commands.choices.items():
        with pytest.raises(SystemExit) as ended:
            sub.parse_args(["--help"])
        assert ended.value.code == 0, name
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        for action in nested:
            for child_name, child in action.choices.items():
                with pytest.raises(SystemExit) as ended:
                    child.parse_args(["--help"])
                assert ended.value.code == 0, f"{name} {child_name}"
    assert "--fail-on" in capsys.readouterr().out


def test_engines_add_list_remove(db_url: str) -> None:
    added = cli(
        "engines", "add", "remote", "http://10.0.0.1:8000", "--kind", "vllm", "--no-probe", "--json"
    )
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["kind"] == "vllm"
    listed = cli("engines", "list", "--json")
    assert [e["name"] for e in json.loads(listed.stdout)] == ["remote"]
    duplicate = cli("engines", "add", "remote", "http://x:1", "--no-probe")
    assert duplicate.returncode == 1
    assert (
        duplicate.stderr.strip()
        == "error: An engine named 'remote' exists already; choose another name or edit it."
    )
    assert cli("engines", "remove", "remote").returncode == 0
    missing = cli("engines", "remove", "remote")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr


def test_engines_add_refuses_a_second_name_for_a_url_unless_asked(db_url: str) -> None:
    first = cli("engines", "add", "one", "http://10.0.0.1:8000", "--kind", "vllm", "--no-probe")
    assert first.returncode == 0, first.stderr
    twin = cli("engines", "add", "two", "http://10.0.0.1:8000/v1/", "--kind", "vllm", "--no-probe")
    assert twin.returncode == 1
    assert "Traceback" not in twin.stderr
    assert "one already point(s) at http://10.0.0.1:8000" in twin.stderr
    assert "--same-url" in twin.stderr
    listed = cli("engines", "list", "--json")
    assert [e["name"] for e in json.loads(listed.stdout)] == ["one"]
    meant = cli(
        "engines", "add", "two", "http://10.0.0.1:8000", "--kind", "vllm", "--no-probe", "--same-url"
    )
    assert meant.returncode == 0, meant.stderr
    listed = cli("engines", "list", "--json")
    assert sorted(e["name"] for e in json.loads(listed.stdout)) == ["one", "two"]


def test_bad_input_exits_non_zero_without_traceback(db_url: str) -> None:
    for args in (
        ["engines", "add", "x", "ftp://nope", "--no-probe"],
        ["engines", "probe", "http://127.0.0.1:9"],
        ["local", "status", "nosuch"],
    ):
        result = cli(*args)
        assert result.returncode != 0, args
        assert "Traceback" not in result.stderr, result.stderr


@pytest.mark.engines
def test_probe_and_status_json(all_local_engines_up, db_url: str) -> None:  # type: ignore[no-untyped-def]
    from services.local_engines import get_spec, specs

    probe = cli("engines", "probe", f"http://127.0.0.1:{get_spec('llamacpp-4slot').port}", "--json")
    assert probe.returncode == 0
    assert json.loads(probe.stdout)["kind"] == "llamacpp"
    status = cli("local", "status", "--json")
    assert status.returncode == 0
    assert {s["id"]: s["status"] for s in json.loads(status.stdout)} == {
        spec.id: "running" for spec in specs()
    }
    added = cli("engines", "add", "auto", f"http://127.0.0.1:{get_spec('vllm-cpu').port}", "--json")
    assert json.loads(added.stdout)["model"] == "smollm2"


def test_local_install_arguments(db_url: str) -> None:
    """`local install` with no backend installs both (a no-op once installed); a wrong one
    is a one-line error."""
    assert cli("local", "install", "--help").returncode == 0
    wrong = cli("local", "install", "tgi")
    assert wrong.returncode == 1 and wrong.stderr.strip().startswith(
        "error: Unknown local backend 'tgi'; the backends are: llamacpp, vllm"
    )


def test_a_deeply_nested_import_ends_with_one_clear_line(db_url: str, tmp_path: Path) -> None:
    """Issue 20: 100,000 nested brackets gave a RecursionError traceback with server paths."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = cli("import", str(deep))
    assert result.returncode == 1
    assert result.stderr.strip() == "error: deep.json is nested too deeply to be a results file."
    assert "Traceback" not in result.stderr + result.stdout
