"""The server's side of the warm Playground worker: one worker process (services/playground/warm.py)
started before it is needed and reused by every send of this server, so a send costs a line on
its pipe instead of a new Python process (about a second on two cores before the first token
could even be asked for). Its timestamps stay away from the Streamlit server's GIL, as a
process per send kept them.

`prepare` starts it (the Playground page calls it on load), `hand_over` gives it a stored
exchange (the run names its pid first, so the exchange reads as streaming from the start),
`tell_stop` passes the Stop button on at once. A worker that died, or one started for another
database, is replaced; when the server goes, its pipe closes and the worker ends once its
exchanges have.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from services.core.config import PROJECT_ROOT, get_settings
from services.core.processes import launch_run_worker
from services.runstate import lifecycle
from services.runstate.lifecycle import RunKind

_lock = threading.Lock()
_process: subprocess.Popen[bytes] | None = None
_key: tuple[str, str] | None = None
#: The exchanges handed to the current warm worker (its pipe takes their stops).
_runs: set[int] = set()


def _spawn(database_url: str, data_dir: str) -> subprocess.Popen[bytes]:
    log_dir = get_settings().data_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env["SHOOTOUT_DATABASE_URL"] = database_url
    env["SHOOTOUT_DATA_DIR"] = data_dir
    with open(log_dir / "playground-warm.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "services.playground.warm"],
            cwd=PROJECT_ROOT,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            # Its own session: a Ctrl-C on the server does not cut the answers mid-stream.
            start_new_session=True,
        )


def _current() -> subprocess.Popen[bytes]:
    """The warm worker for this process's database (the caller holds _lock)."""
    global _process, _key
    settings = get_settings()
    key = (settings.database_url, str(settings.data_dir))
    if _process is not None and _process.poll() is None and key == _key:
        return _process
    _retire()
    _process, _key = _spawn(*key), key
    return _process


def _retire() -> None:
    """Close the current worker's pipe: it ends once its exchanges have."""
    global _process
    if _process is not None and _process.stdin is not None:
        try:
            _process.stdin.close()
        except OSError:
            pass
    _process = None
    _runs.clear()


def prepare() -> None:
    """Have a warm worker ready for the next send."""
    with _lock:
        _current()


def _tell(process: subprocess.Popen[bytes], line: str) -> bool:
    assert process.stdin is not None
    try:
        process.stdin.write(line.encode() + b"\n")
        process.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def hand_over(run_id: int) -> int:
    """Stream this stored exchange in the warm worker; returns its pid. A worker that cannot
    take it (gone since) is replaced by a process of the exchange's own."""
    with _lock:
        process = _current()
        lifecycle.beat(run_id, worker_pid=process.pid)
        if _tell(process, f"run {run_id}"):
            _runs.add(run_id)
            return process.pid
        _retire()
    pid = launch_run_worker(RunKind.PLAYGROUND, run_id)
    lifecycle.beat(run_id, worker_pid=pid)
    return pid


def tell_stop(run_id: int) -> bool:
    """Pass a stop to the warm worker streaming this exchange; False when it streams none here."""
    with _lock:
        if run_id not in _runs or _process is None or _process.poll() is not None:
            return False
        return _tell(_process, f"stop {run_id}")


def shutdown() -> None:
    """Close the warm worker's pipe (tests; a server's end closes it too)."""
    with _lock:
        _retire()
