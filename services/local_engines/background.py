"""Installing and starting the local engines behind the app: `./run.sh` serves the app at once and
leaves `shootout local up` to run detached (its own session: Ctrl-C on the app never reaches it),
its lines in `<engines dir>/run/up.log`, its PID in `<engines dir>/run/background.json`.
`local down` stops it with the engines; `./run.sh` again finds it running and leaves it be.

`plan()` is what `./run.sh` says before any of it: which engines, about how many GB and minutes
on this machine's cores, whether the disk holds them, and how to choose fewer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from services.core.config import PROJECT_ROOT
from services.core.processes import pid_alive, start_ticks
from services.local_engines import progress
from services.local_engines.backend import get_backend
from services.local_engines.catalog import chosen_backends
from services.local_engines.paths import engines_dir, state_dir
from services.local_engines.state import terminate_group

#: Room left free beside the engines (pip's unpacking, logs, the app's own data).
DISK_MARGIN_GB = 1.0


def up_log() -> Path:
    return state_dir() / "up.log"


def _pid_file() -> Path:
    return state_dir() / "background.json"


def _read() -> dict[str, dict]:
    try:
        found = json.loads(_pid_file().read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _command_line(pid: int) -> list[bytes] | None:
    """The arguments `pid` runs with, or None when it has ended."""
    command = b""
    for _ in range(20):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        # A child just started shows no arguments for a moment: the kernel closes its
        # close-on-exec files (which ends Popen's wait) before it sets the new program's
        # arguments. A flaky test found it (2 runs in 3 on a busy machine).
        if command or not pid_alive(pid):
            break
        time.sleep(0.05)
    return command.split(b"\0")[:-1] if pid_alive(pid) else None


def _is_ours(pid: int, info: dict) -> bool:
    """True when `pid` is still the process start() recorded: the same command line, exactly,
    and the same start time. A PID the system gave to another program since (an editor on
    cli.py, a backup job whose arguments hold "up") is not ours to report or stop. The record
    says which checkout's cli.py it ran: the engines folder, and so this file, is shared by
    every checkout and app that points at it (a test's scratch clone and the tests' own app)."""
    argv = info.get("argv")
    if not isinstance(argv, list):
        return False  # a record from before argv was kept: its PID alone proves nothing
    if _command_line(pid) != [str(a).encode() for a in argv]:
        return False
    ticks = info.get("start_ticks")
    return ticks is None or start_ticks(pid) == ticks


def running() -> dict[int, dict]:
    """The background installs and starts that still run: PID -> what it was asked."""
    return {int(pid): info for pid, info in _read().items() if _is_ours(int(pid), info)}


def start(engine_ids: list[str] | None = None) -> tuple[int, bool]:
    """Start `shootout local up [ENGINE_IDS]` detached; (its PID, True), or (the PID of the one
    running already, False) when the whole set is asked for again."""
    alive = running()
    if not engine_ids:
        for pid, info in alive.items():
            if not info.get("ids"):
                return pid, False
    log = up_log()
    if not alive and log.exists():
        log.replace(log.with_name("up.log.1"))  # each fresh start's lines, from the top
    argv = [sys.executable, str(PROJECT_ROOT / "cli.py"), "local", "up", *(engine_ids or [])]
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=str(PROJECT_ROOT),
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
    entries = {str(pid): info for pid, info in alive.items()}
    entries[str(process.pid)] = {
        "ids": engine_ids or [],
        "started": time.time(),
        "log": str(log),
        "argv": argv,
        "start_ticks": start_ticks(process.pid),
    }
    _pid_file().write_text(json.dumps(entries, indent=2))
    return process.pid, True


def stop(timeout_s: float = 10.0) -> list[int]:
    """Stop every background install and start (its pip, its compile: the whole process group);
    the engines it started already run in their own sessions and are stopped by `down`."""
    stopped = [pid for pid in running() if terminate_group(pid, timeout_s)]
    _pid_file().unlink(missing_ok=True)
    progress.stop_all()
    return stopped


@dataclass(frozen=True)
class Plan:
    chosen: tuple[str, ...]
    #: The chosen backends not installed yet, with (seconds, GB) each.
    to_install: dict[str, tuple[float, float]]
    free_gb: float
    cores: int

    @property
    def gb(self) -> float:
        return sum(gb for _s, gb in self.to_install.values())

    @property
    def seconds(self) -> float:
        """All install at once: the longest one, or the cores' share of them all, whichever
        is longer (the compile needs the cores the others unpack with)."""
        each = [s for s, _gb in self.to_install.values()]
        return max([*each, sum(each) / max(1, self.cores)], default=0.0)

    @property
    def fits(self) -> bool:
        return self.gb + DISK_MARGIN_GB <= self.free_gb

    def fitting(self) -> list[str]:
        """The backends that fit the free disk, taken in order (what to choose instead)."""
        room, chosen = self.free_gb - DISK_MARGIN_GB, []
        for name in self.chosen:
            gb = self.to_install.get(name, (0.0, 0.0))[1]
            if gb <= room:
                chosen.append(name)
                room -= gb
        return chosen

    def lines(self) -> list[str]:
        if not self.chosen:
            return ["Shootout: no local engines (SHOOTOUT_LOCAL_ENGINES=none)."]
        if not self.to_install:
            return [f"Shootout: starting the local engines ({', '.join(self.chosen)}) behind the app."]
        first = (
            f"Shootout: serving the app first, then installing {', '.join(self.to_install)} behind it: "
            f"about {self.gb:.1f} GB and {progress.minutes(self.seconds)} on {self.cores} core(s) "
            f"({self.free_gb:.0f} GB free)."
        )
        fewer = (
            "  Fewer: SHOOTOUT_LOCAL_ENGINES=vllm (or llamacpp,router; none for no engines). "
            "Watch: the Engines page, or `shootout local status`; stop: `shootout local down`."
        )
        said = [first, fewer]
        if not self.fits:
            fitting = ",".join(self.fitting()) or "none"
            said.append(
                f"Shootout: NOT installing: the engines need about {self.gb + DISK_MARGIN_GB:.1f} GB "
                f"and {self.free_gb:.1f} GB are free in {engines_dir()}. What fits: "
                f"SHOOTOUT_LOCAL_ENGINES={fitting}"
            )
        return said


def _free_gb(path: Path) -> float:
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free / 1024**3


def plan() -> Plan:
    chosen = chosen_backends()
    to_install = {
        name: (progress.estimate_s(name), progress.DOCUMENTED.get(name, (0.0, 1.0))[1])
        for name in chosen
        if not get_backend(name).installed()
    }
    return Plan(chosen, to_install, _free_gb(engines_dir()), os.cpu_count() or 1)
