"""Each local backend's install as it goes, kept on disk so that any process can show it: the
installer writes `<engines dir>/run/install/<backend>.json` (state, phase, times, reason) and the
backend's whole output to `<engines dir>/run/install-<backend>.log`; `local status`, the Engines
page and the sidebar read them.

The terminal gets one line per phase per backend (its time, and the environment's size so far),
and on a failure the last meaningful lines of the log and its path; pip's own output, its
environment warnings and resolver notes stay in the log.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from services.core.config import get_settings
from services.core.processes import pid_alive

Log = Callable[[str], None]
State = Literal["queued", "installing", "installed", "failed", "stopped"]

#: What the steps are called, in the order an install goes through them.
PHASES = ("queued", "download", "build", "convert", "smoke test")

#: How long a backend's install takes and how much it puts on disk, on 2 cores with empty
#: caches (docs/figures.md: the installs of 2026-12-03 and 2026-12-04, and the two fresh VMs of
#: issue 48). An earlier install on this machine, when there is one, is the better estimate.
DOCUMENTED: dict[str, tuple[float, float]] = {
    # backend: (seconds, GB)
    # With the cores to itself while the others install niced behind it (2026-12-07, 5 min 17 s).
    "llamacpp": (320.0, 0.3),
    "vllm": (160.0, 3.5),
    "sglang": (240.0, 6.7),
    "triton": (113.0, 1.3),
    "router": (25.0, 0.15),
}
#: The part of an install's time that scales with the cores (the compile); the rest is
#: downloads and unpacking.
CPU_BOUND = {"llamacpp": 0.9}
DOCUMENTED_CORES = 2

#: Lines of a log that say nothing about a failure: pip's progress, notes and warnings.
_NOISE = re.compile(
    r"^\s*$|^WARNING|^\s*(Collecting|Downloading|Using cached|Requirement already|Obtaining|"
    r"Installing collected|Attempting uninstall|Found existing|Uninstalling|Successfully uninstalled|"
    r"Looking in|Processing|Building wheel|Created wheel|Stored in|Preparing metadata|Getting requirements|"
    r"Installing build|Building editable|Running command|DEPRECATION|\[notice\]|===|NOT installed:)|[━█]"
)


def _run_dir() -> Path:
    return get_settings().engines_dir / "run"


def record_path(backend: str) -> Path:
    return _run_dir() / "install" / f"{backend}.json"


def log_path(backend: str) -> Path:
    return _run_dir() / f"install-{backend}.log"


def _history_path() -> Path:
    return _run_dir() / "install-times.json"


@dataclass
class InstallProgress:
    backend: str
    state: State
    phase: str
    started: float
    phase_started: float
    finished: float | None
    reason: str
    log: str
    pid: int
    estimate_s: float

    @property
    def elapsed_s(self) -> float:
        return (self.finished or time.time()) - self.started

    @property
    def active(self) -> bool:
        """Queued or installing in a process that still runs."""
        return self.state in ("queued", "installing") and pid_alive(self.pid)

    def summary(self) -> str:
        """One line: "installing, build, 3 min 10 s of about 9 min"."""
        state = self.state
        if state in ("queued", "installing") and not pid_alive(self.pid):
            return f"install stopped during {self.phase} (run `./run.sh` or `local up` again)"
        if state == "failed":
            return f"install failed after {minutes(self.elapsed_s)}: {self.reason}"
        if state == "queued":
            return "install queued (waiting for the one before it)"
        if state == "installed":
            return f"installed in {minutes(self.elapsed_s)}"
        if state == "stopped":
            return f"install stopped during {self.phase}"
        return f"installing: {self.phase}, {minutes(self.elapsed_s)} of about {minutes(self.estimate_s)}"


def minutes(seconds: float) -> str:
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    return f"{whole // 60} min {whole % 60:02d} s"


def read(backend: str) -> InstallProgress | None:
    try:
        return InstallProgress(**json.loads(record_path(backend).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _write(record: InstallProgress) -> None:
    path = record_path(record.backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(record)))
    tmp.replace(path)


def estimate_s(backend: str, cores: int | None = None) -> float:
    """This machine's last install of `backend`, else the documented figure scaled to its cores."""
    try:
        earlier = json.loads(_history_path().read_text()).get(backend)
    except (OSError, ValueError):
        earlier = None
    if isinstance(earlier, (int, float)) and earlier > 0:
        return float(earlier)
    seconds = DOCUMENTED.get(backend, (120.0, 1.0))[0]
    share = CPU_BOUND.get(backend, 0.0)
    cores = cores or os.cpu_count() or DOCUMENTED_CORES
    return seconds * (1 - share) + seconds * share * DOCUMENTED_CORES / cores


_history_lock = threading.Lock()


def _remember(backend: str, seconds: float) -> None:
    # Two installs (llama.cpp's thread and another) may end at once: one writer at a time.
    with _history_lock:
        try:
            history = json.loads(_history_path().read_text())
        except (OSError, ValueError):
            history = {}
        history[backend] = max(1.0, round(seconds, 1))
        _history_path().write_text(json.dumps(history, indent=2))


def size_gb(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total / 1024**3


def meaningful_tail(path: Path | str, lines: int = 8) -> list[str]:
    """The last lines of a log that say something: pip's progress, notes and warnings left out."""
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in text if not _NOISE.search(line)][-lines:]


_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("install", default=None)


def phase(name: str) -> None:
    """The install running in this thread has reached `name` (one of PHASES); nothing outside one."""
    recorder = _current.get()
    if recorder is not None:
        recorder.phase(name)


class Recorder:
    """One backend's install: its log file, its record on disk, its lines in the terminal."""

    def __init__(self, backend: str, say: Log, venv: Path | None = None) -> None:
        self.backend = backend
        self.say = say
        self.venv = venv
        self.record = queued_record(backend, os.getpid())
        log_path(backend).parent.mkdir(parents=True, exist_ok=True)
        self._file = open(log_path(backend), "a", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed by finish()
        _write(self.record)

    def line(self, text: str) -> None:
        if self._file.closed:  # a thread's last word after its install ended
            return
        self._file.write(text + "\n")
        self._file.flush()

    @contextlib.contextmanager
    def active(self) -> Iterator[Recorder]:
        """This thread's install is this one (`phase()` reaches it)."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def begin(self) -> None:
        now = time.time()
        self.line(f"=== {time.strftime('%Y-%m-%d %H:%M:%S')} installing {self.backend}")
        self.record.state, self.record.started, self.record.phase_started = "installing", now, now
        self.record.phase = "download"
        _write(self.record)

    def phase(self, name: str) -> None:
        if name == self.record.phase:
            return
        self._close_phase()
        self.record.phase, self.record.phase_started = name, time.time()
        _write(self.record)

    def _size(self) -> str:
        return f", {size_gb(self.venv):.2f} GB" if self.venv is not None and self.venv.exists() else ""

    def _close_phase(self) -> None:
        if self.record.state != "installing":
            return
        took = time.time() - self.record.phase_started
        self.say(f"{self.backend}: {self.record.phase} {minutes(took)}{self._size()}")

    def finish(self) -> None:
        self._close_phase()
        self.record.state, self.record.finished = "installed", time.time()
        _write(self.record)
        _remember(self.backend, self.record.elapsed_s)
        self.say(f"{self.backend}: installed in {minutes(self.record.elapsed_s)}{self._size()}")
        self._file.close()

    def fail(self, reason: str) -> None:
        self.line(f"NOT installed: {reason}")
        self.record.state, self.record.finished = "failed", time.time()
        first = reason.splitlines()[0] if reason else "unknown"
        # The tool's own last error says more than its exit status ("No matching distribution").
        errors = [t for t in meaningful_tail(self.record.log, 20) if t.startswith("ERROR")]
        if errors and errors[-1] not in first:
            first = f"{first}: {errors[-1].removeprefix('ERROR:').strip()}"
        self.record.reason = first[:500]
        _write(self.record)
        self._file.close()
        self.say(
            f"{self.backend}: NOT installed after {minutes(self.record.elapsed_s)} "
            f"({self.record.phase}): {self.record.reason}"
        )
        for text in meaningful_tail(self.record.log):
            self.say(f"{self.backend}|   {text}")
        self.say(f"{self.backend}: whole log: {self.record.log}")


def mark_queued(backend: str, pid: int) -> None:
    """`backend`'s install is asked for again (Retry) in process `pid`, which may first wait for
    another install: shown as queued from now on, not as the failure it retries."""
    _write(queued_record(backend, pid))


def coming() -> list[str]:
    """The backends whose install goes on now (queued or installing): files only, no probing,
    cheap enough for every page's sidebar."""
    found = []
    for path in sorted((_run_dir() / "install").glob("*.json")):
        record = read(path.stem)
        if record is not None and record.active:
            found.append(record.backend)
    return found


def stop_all() -> list[str]:
    """Mark installs whose process is gone as stopped (after `local down`); their names."""
    stopped = []
    for path in sorted((_run_dir() / "install").glob("*.json")):
        record = read(path.stem)
        if record and record.state in ("queued", "installing") and not pid_alive(record.pid):
            record.state, record.finished = "stopped", time.time()
            _write(record)
            stopped.append(record.backend)
    return stopped


def queued_record(backend: str, pid: int) -> InstallProgress:
    """A fresh record of an install waiting its turn, by the process `pid` that will run it."""
    now = time.time()
    return InstallProgress(
        backend=backend,
        state="queued",
        phase="queued",
        started=now,
        phase_started=now,
        finished=None,
        reason="",
        log=str(log_path(backend)),
        pid=pid,
        estimate_s=round(estimate_s(backend)),
    )
