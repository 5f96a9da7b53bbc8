"""PID checks read /proc as proc(5) lays it out (issue 57), and a background start is known by
its own arguments, never by words somewhere in another program's command line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from services.core.processes import pid_alive, start_ticks
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
    tmp_path: Path,
) -> None:
    # A stand-in cli.py that only sleeps, where start() would find the real one.
    (tmp_path / "cli.py").write_text("import time\ntime.sleep(60)\n")
    cli = str(tmp_path / "cli.py")
    asked = [sys.executable, cli, "local", "up", "vllm-cpu"]
    with child([sys.executable, cli, "backup", "--up"]) as process:
        time.sleep(0.3)
        record = {"argv": asked, "start_ticks": start_ticks(process.pid)}
        assert not background._is_ours(process.pid, record)
    with child(asked) as process:
        time.sleep(0.3)
        record = {"argv": asked, "start_ticks": start_ticks(process.pid)}
        assert background._is_ours(process.pid, record)
        # The same arguments in a process started at another time (its PID reused): not ours.
        assert not background._is_ours(process.pid, {**record, "start_ticks": record["start_ticks"] - 1})
        # A record from before the arguments were kept names no process for certain.
        assert not background._is_ours(process.pid, {"ids": ["vllm-cpu"]})


def test_start_ticks_is_the_22nd_field_and_differs_between_processes() -> None:
    with child([sys.executable, "-c", RENAMED]) as process:
        assert process.stdout is not None and process.stdout.readline().strip() == "named"
        mine, theirs = start_ticks(os.getpid()), start_ticks(process.pid)
        assert mine is not None and theirs is not None and theirs >= mine
        uptime_ticks = float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK")
        assert theirs <= uptime_ticks + 1
    assert start_ticks(process.pid) is None
