"""Small helpers about operating-system processes, shared by the engine launcher and the
run workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from services.core.config import PROJECT_ROOT, get_settings
from services.core.errors import ShootoutError


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity)."""
    return max(1, len(os.sched_getaffinity(0)))


def pid_alive(pid: int | None) -> bool:
    """True when a process with this PID runs (a zombie, exited but not yet reaped, does not)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # The name in parentheses is the program's own and may hold ") Z": the state is the
        # first field after the *last* parenthesis (proc(5)).
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks after boot (proc(5) field 22): with its PID, this
    names one process for the machine's uptime, where a PID alone is reused once reaped."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


#: The run workers this process started, by pid: `worker_exited` asks the process itself (a
#: pid alone could be another host's, with a shared database, or reused once reaped).
_workers: dict[int, subprocess.Popen[bytes]] = {}
_workers_lock = threading.Lock()


def worker_exited(pid: int | None) -> bool:
    """True when `pid` is a run worker this process started and it has ended (killed, crashed
    or done); False for a pid this process did not start, whose liveness it cannot know."""
    with _workers_lock:
        process = _workers.get(pid) if pid else None
    return process is not None and process.poll() is not None


def launch_run_worker(kind: str, run_id: int) -> int:
    """Start `python -m services.runstate.worker KIND RUN_ID` detached (its own session, so it outlives
    the page or command that started it), with this process's database; returns its pid.
    Timed work runs there rather than in the Streamlit server, whose GIL pauses would skew
    timings. Its output goes to <data dir>/logs/KIND-RUN_ID.log."""
    settings = get_settings()
    log_dir = settings.data_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env["SHOOTOUT_DATABASE_URL"] = settings.database_url
    env["SHOOTOUT_DATA_DIR"] = str(settings.data_dir)
    with open(log_dir / f"{kind}-{run_id}.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.runstate.worker", kind, str(run_id)],
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    with _workers_lock:
        for pid in [pid for pid, known in _workers.items() if known.poll() is not None]:
            del _workers[pid]  # ended and reaped: its run was seen ended or marked since
        _workers[process.pid] = process
    return process.pid


def worker_main(
    argv: list[str], module: str, body: Callable[[int], object], on_stop: Callable[[int], object]
) -> int:
    """The entry point of a run's worker process: `python -m MODULE RUN_ID`. SIGTERM and
    SIGINT call `on_stop(run_id)` (stop like the page's button; what ran is kept); a
    ShootoutError ends it with one line and exit 1."""
    if len(argv) != 1 or not argv[0].isdigit():
        print(f"usage: python -m {module} RUN_ID", file=sys.stderr)
        return 2
    run_id = int(argv[0])
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: on_stop(run_id))
    try:
        body(run_id)
    except ShootoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)  # Python's (KeyboardInterrupt) or asyncio.Runner's
        return
    raise KeyboardInterrupt  # SIGINT ignored (a job started with `&`): stop all the same


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """While the block runs, SIGTERM (a CI timeout, `docker stop`, systemd) does what Ctrl-C
    does: whatever handles SIGINT at that moment runs, so a command stops its run, keeps what
    it measured and exits 130 instead of dying with its run stored as "running" for ever.
    Only the main thread can set a handler; elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _as_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
