"""What a page comparing local engines says about the cores they share (issue 47): the local
engines run on this machine's CPU cores at the same lower priority (ENGINE_NICENESS), so the
kernel splits the cores between whatever of them is working; an engine that generates for
someone else meanwhile slows the ones compared. The check reads the state file and each
process's liveness only (no health request), so a page can ask on every draw."""

from __future__ import annotations

import os
from collections.abc import Iterable

from services.core.processes import pid_alive
from services.local_engines.catalog import ENGINE_NICENESS, specs
from services.local_engines.state import read_state, state_key


def live_ids() -> list[str]:
    """The local engines whose process is alive now (started by anyone on this machine)."""
    state = read_state()
    return [spec.id for spec in specs() if pid_alive(state.get(state_key(spec), {}).get("pid"))]


def shared_cores_note(compared: Iterable[str | None], together: bool) -> str | None:
    """The note for a comparison of engines whose local ids are `compared` (None for an engine
    that is not local): None when none is local. `together`: they answer at the same time."""
    local = sorted({engine_id for engine_id in compared if engine_id})
    if not local:
        return None
    cores = os.cpu_count() or 1
    others = [engine_id for engine_id in live_ids() if engine_id not in local]
    shared = (
        f"Local engines share this machine's {cores} CPU cores (no GPU), all at the same lower "
        f"priority (nice {ENGINE_NICENESS}): the kernel splits the cores between those working."
    )
    parts = [shared]
    if together and len(local) > 1:
        parts.append(
            f"The {len(local)} compared here answer at the same time, so each one's speed is "
            "what it gets while the others work: compare them one at a time for speeds of "
            "their own."
        )
    if others:
        parts.append(
            f"Also running here: {', '.join(others)}. Whatever they generate meanwhile (another "
            "user's exchange, a benchmark) takes cores from the engines compared; stop them on "
            "the Engines page (Local engines) or with `shootout local down <id>` for "
            "figures that are theirs alone."
        )
    else:
        parts.append("No other local engine runs now.")
    return " ".join(parts)
