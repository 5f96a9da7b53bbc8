"""Small helpers about operating-system processes, shared by the engine launcher and the
benchmark worker."""

from __future__ import annotations

import os
from pathlib import Path


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
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
    except (OSError, IndexError):
        return True
    return state != "Z"
