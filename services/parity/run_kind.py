"""Parity runs as a run kind: the worker asks every engine the task's questions and scores
the answers; it stops before its next request."""

from __future__ import annotations

from collections.abc import Callable

from services.runstate.lifecycle import RunKind
from services.runstate.run_kinds import RunKindSpec, register


def _execute(run_id: int, should_stop: Callable[[], bool]) -> None:
    # Imported by the worker, not by the registry (which every page loads).
    from services.parity.runner import execute_parity

    execute_parity(run_id, should_stop=should_stop)


SPEC = register(
    RunKindSpec(
        RunKind.PARITY,
        "parity run",
        execute=_execute,
        interrupted=(
            "The parity run's worker stopped without finishing (killed, or the app restarted); the "
            "answers stored so far are kept."
        ),
    )
)
