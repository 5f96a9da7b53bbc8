"""Benchmarks as a run kind: the worker runs the load, and a benchmark whose worker died gets
the summary of the rows it stored (services/bench/jobs/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from services.core.lifecycle import RunKind
from services.core.run_kinds import RunKindSpec, register


def _execute(run_id: int, should_stop: Callable[[], bool]) -> None:
    # The load generator's modules are heavy: imported by the worker, not by the registry.
    from services.bench.jobs import execute_run

    execute_run(run_id, should_stop=should_stop)


def _recover(stale_after_s: float) -> Sequence[int]:
    # As above: recovery loads the jobs modules when it runs.
    from services.bench.jobs import mark_interrupted_runs

    return mark_interrupted_runs(stale_after_s)


SPEC = register(
    RunKindSpec(
        RunKind.BENCHMARK, "benchmark run", execute=_execute, recover=_recover, many_sockets=True
    )
)
