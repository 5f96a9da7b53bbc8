"""The real local engines start in the background as the session begins, while the tests that do
not need them run (those that do are ordered after them): their start is minutes of imports,
weight loading and warm-up on 2 cores, and it used to hold up the first engine test in full.

`cli.py local up` runs in a child process, not a thread: tests change SHOOTOUT_* variables (the
engines folder among them) with monkeypatch while it works, and a child keeps the environment it
started with. The engines run niced below the tests (services/local_engines/launch.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class EarlyStart:
    #: Engines that ran before the session: left running at its end.
    before: set[str] = field(default_factory=set)
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    #: Whether the session fixture took over (it stops what the session started).
    claimed: bool = False

    def begin(self) -> None:
        import services.engines  # noqa: F401 - registers the kinds (a file run alone has not)
        from services import local_engines

        self.before = {s.id for s in local_engines.status() if s.status == "running"}
        if {s.id for s in local_engines.specs()} <= self.before:
            return
        handle, name = tempfile.mkstemp(prefix="shootout-engines-up-", suffix=".log")
        self.log_path = Path(name)
        self.process = subprocess.Popen(
            [sys.executable, str(REPO_ROOT / "cli.py"), "local", "up"],
            cwd=REPO_ROOT,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
        os.close(handle)

    def wait(self, timeout_s: float = 900.0) -> str:
        """Wait for the child; what it printed (the reasons of an engine that did not start)."""
        if self.process is None:
            return ""
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        said = self.log_path.read_text(errors="replace") if self.log_path else ""
        self.process = None
        return said

    def stop_what_the_session_started(self) -> None:
        from services import local_engines

        self.wait()
        local_engines.stop_many([s.id for s in local_engines.specs() if s.id not in self.before])


EARLY = EarlyStart()
