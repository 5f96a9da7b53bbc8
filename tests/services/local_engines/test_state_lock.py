"""state.json across processes (issue 57): the app, `shootout local up` and a test session start
and stop engines at once; each read-change-write must keep the others' entries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

# Each writer adds its own keys, one read-change-write at a time, as start() and stop() do.
WRITER = """
import sys, time
from services.local_engines import state
name, count = sys.argv[1], int(sys.argv[2])
for index in range(count):
    with state.state_lock:
        current = state.read_state()
        time.sleep(0.001)  # the window in which another process may write
        current[f"{name}-{index}"] = {"pid": None, "port": index}
        state.write_state(current)
"""


def test_writers_in_several_processes_lose_no_entry(tmp_path: Path) -> None:
    env = {"SHOOTOUT_ENGINES_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, f"w{n}", "40"], cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE
        )
        for n in range(3)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    entries = json.loads((tmp_path / "run" / "state.json").read_text())
    assert len(entries) == 3 * 40, sorted(entries)
    assert not list((tmp_path / "run").glob("*.tmp"))  # no writer's file left behind
