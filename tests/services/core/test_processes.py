"""PID checks read /proc as proc(5) lays it out (issue 57), and a background start is known by
its own arguments, never by words somewhere in another program's command line."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from services.core.processes import pid_alive
from services.local_engines import background

# Renames itself (prctl PR_SET_NAME, as any program may) to a name holding ") Z ".
RENAMED = """
import ctypes, time
ctypes.CDLL(None).prctl(15, b"x) Z y", 0, 0, 0)
print("named", flush=True)
time.sleep(60)
"""


@contextmanager
def child(args: list[str]) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_live_process_whose_name_holds_a_parenthesis_and_z_is_alive() -> None:
    with child([sys.executable, "-c", RENAMED]) as process:
        assert process.stdout is not None and process.stdout.readline().strip() == "named"
        with open(f"/proc/{process.pid}/stat") as stat:
            assert "(x) Z y)" in stat.read()
        assert pid_alive(process.pid)


def test_a_command_line_that_merely_holds_cli_py_and_up_is_not_a_background_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in cli.py that only sleeps, where start() would find the real one.
    (tmp_path / "cli.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(background, "PROJECT_ROOT", tmp_path)
    cli = str(tmp_path / "cli.py")
    with child([sys.executable, cli, "backup", "--up"]) as process:
        time.sleep(0.3)
        assert not background._is_ours(process.pid)
    with child([sys.executable, cli, "local", "up", "vllm-cpu"]) as process:
        time.sleep(0.3)
        assert background._is_ours(process.pid)
