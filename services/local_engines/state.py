"""The local engines' run state (`<engines dir>/run/state.json`: PID, port, log per engine) and
their status as read from it, the processes and /health."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Self

from services.core import http
from services.core.processes import pid_alive
from services.local_engines import machine, progress
from services.local_engines.backend import get_backend
from services.local_engines.catalog import LocalEngineSpec, LocalEngineStatus, Status, get_spec, specs
from services.local_engines.paths import is_installed, state_dir


def state_key(spec: LocalEngineSpec) -> str:
    # Keyed by port too: engines moved with SHOOTOUT_LOCAL_PORT_BASE are other processes.
    return f"{spec.id}@{spec.port}"


def _state_file() -> Path:
    return state_dir() / "state.json"


def read_state() -> dict[str, dict]:
    try:
        return json.loads(_state_file().read_text())
    except (FileNotFoundError, ValueError):
        return {}


def write_state(state: dict[str, dict]) -> None:
    # A file of this process's own: two writers sharing one `.tmp` could rename each other's
    # half-written file into place.
    tmp = _state_file().with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(_state_file())


class _StateLock:
    """Held around every read-change-write of state.json, across threads *and* processes: the
    app, `shootout local up` and a test session start and stop engines at once, and a thread
    lock alone let one process's write drop another's start (seen: three engines listening on
    their ports while state.json said stopped, so `local up` refused the ports). flock on a
    file beside it, as the installer does; the kernel drops it when a holder dies."""

    def __init__(self) -> None:
        self._threads = threading.Lock()
        self._file: int | None = None

    def __enter__(self) -> Self:
        self._threads.acquire()
        try:
            self._file = os.open(state_dir() / "state.lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._file, fcntl.LOCK_EX)
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        if self._file is not None:
            os.close(self._file)  # closing the descriptor releases the flock
            self._file = None
        self._threads.release()


state_lock = _StateLock()
#: Engines this process started, by PID: their exit status tells how they died.
children: dict[int, subprocess.Popen] = {}


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now (the kernel's pick): a smoke run's."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def health(url: str, path: str = "/health") -> tuple[bool, str]:
    try:
        response = http.fetch("GET", url + path, deadline_s=2.0, max_bytes=64 * 1024)
    except http.HttpError as error:
        return False, str(error)
    return response.status == 200, f"HTTP {response.status}"


def log_tail(path: str | None, lines: int = 6) -> str:
    if not path:
        return ""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def status(engine_id: str | None = None) -> list[LocalEngineStatus]:
    chosen = [get_spec(engine_id)] if engine_id else specs()
    state = read_state()
    result = []
    for spec in chosen:
        entry = state.get(state_key(spec), {})
        url = f"http://127.0.0.1:{spec.port}"
        pid = entry.get("pid")
        installed = is_installed(spec.backend)
        record = progress.read(spec.backend)
        if pid_alive(pid):
            path = get_backend(spec.backend).health_path
            ok, detail = health(url, path)
            state_name: Status = "running" if ok else "starting"
            message = "healthy" if ok else f"process {pid} is up, {path}: {detail}"
        elif record is not None and record.active:
            state_name, message = "installing", record.summary()
        elif record is not None and record.state == "failed" and not installed:
            state_name, message = "failed", record.summary()
        elif entry.get("failed"):
            state_name, message = "failed", entry["failed"]
        elif pid:
            # Started and never stopped, yet gone: it died (a page's Start does not wait).
            state_name, message = "failed", f"exited: {death_reason(pid, entry.get('log'))}"
        elif not installed:
            state_name = "not_installed"
            # A record of an install that went well says nothing of a backend missing now.
            if record is None or record.state == "installed":
                message = "not installed yet (`./run.sh`, or `shootout local up`)"
            else:
                message = record.summary()
            pid = None
        else:
            state_name, message = "stopped", "stopped"
            pid = None
        result.append(
            LocalEngineStatus(
                id=spec.id,
                label=spec.label,
                kind=spec.kind,
                port=spec.port,
                url=url,
                status=state_name,
                pid=pid if state_name in ("running", "starting") else None,
                log_file=entry.get("log"),
                message=message,
                installed=installed,
                install=_install_dict(record),
            )
        )
    return result


def _install_dict(record: progress.InstallProgress | None) -> dict | None:
    if record is None:
        return None
    return {**asdict(record), "elapsed_s": round(record.elapsed_s, 1), "summary": record.summary()}


def death_reason(pid: int | None, log_path: str | None) -> str:
    """How an engine died, in plain words: its signal or exit status when this process
    started it, and the last line of its log."""
    parts = []
    child = children.get(pid or -1)
    if child is not None and child.poll() is not None:
        how, name = machine.describe_exit(child.returncode)
        if name == "SIGILL":
            how += ": the build uses an instruction this CPU does not run; `shootout local install` rebuilds it"
        parts.append(how)
    last = log_tail(log_path, 1).strip()
    if last:
        parts.append(f"last log line: {last[:300]}")
    return "; ".join(parts) or "no log"


def terminate_group(pid: int, timeout_s: float) -> bool:
    """SIGTERM to `pid`'s process group, SIGKILL after `timeout_s` (the engines' and the
    background start's); False when there was none to signal (gone, or a PID now another
    user's)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            break
        _reap(pid)
        time.sleep(0.2)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def mark_failed(spec: LocalEngineSpec, reason: str) -> None:
    with state_lock:
        state = read_state()
        entry = state.get(state_key(spec), {})
        entry.update({"pid": None, "failed": reason})
        state[state_key(spec)] = entry
        write_state(state)
