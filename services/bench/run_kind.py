"""Benchmarks as a run kind: the worker runs the load, and a benchmark whose worker died gets
the summary of the rows it stored (services/bench/jobs/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from services.runstate.lifecycle import RunKind
from services.runstate.run_kinds import RunKindSpec, register

if TYPE_CHECKING:
    from db.models import Run

#: Run.error of a benchmark whose worker is gone (killed, crashed, or the app restarted).
INTERRUPTED = "The benchmark worker stopped without finishing (process gone)."


def _execute(run_id: int, should_stop: Callable[[], bool]) -> None:
    # The load generator's modules are heavy: imported by the worker, not by the registry.
    from services.bench.jobs import execute_run

    execute_run(run_id, should_stop=should_stop)


def _recover(stale_after_s: float) -> Sequence[int]:
    # As above: recovery loads the jobs modules when it runs.
    from services.bench.jobs import mark_interrupted_runs

    return mark_interrupted_runs(stale_after_s)


def _keep_partial_summary(run: Run) -> None:
    # As above: only when a benchmark's worker died while the server runs.
    from services.bench.jobs import partial_summary

    run.summary = partial_summary(run.id)


SPEC = register(
    RunKindSpec(
        RunKind.BENCHMARK,
        "benchmark run",
        execute=_execute,
        interrupted=INTERRUPTED,
        recover=_recover,
        on_interrupted=_keep_partial_summary,
        many_sockets=True,
    )
)
