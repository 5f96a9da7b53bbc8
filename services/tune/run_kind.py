"""Tuning as a run kind: a sweep of engine configurations, each started, benchmarked and
stopped by the worker; a dead worker's engine is stopped at recovery."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from services.runstate.lifecycle import RunKind
from services.runstate.run_kinds import RunKindSpec, register

if TYPE_CHECKING:
    from db.models import Run


def _execute(run_id: int, should_stop: Callable[[], bool]) -> None:
    # Imported by the worker, not by the registry (which every page loads).
    from services.tune.jobs import execute_run

    execute_run(run_id, should_stop=should_stop)


def _stop_engines(run: Run) -> None:
    # Recovery loads the tuning jobs only when a tuning worker died.
    from services.tune.jobs import stop_leftover_engines

    stop_leftover_engines(run.id)  # a dead tuning worker leaves no engine running


SPEC = register(
    RunKindSpec(
        RunKind.TUNE,
        "tuning run",
        execute=_execute,
        interrupted="The tuning worker stopped without finishing; the configurations measured so far are kept.",
        on_interrupted=_stop_engines,
    )
)
