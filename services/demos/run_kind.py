"""Demos as a run kind: a demo timestamps tokens, so it runs in a worker process too (inside
the Streamlit server its reader would share the GIL with every page run: the stalls that once
gave three Playground columns one TTFT). Its Stop lets the requests in flight finish."""

from __future__ import annotations

from collections.abc import Callable

from services.runstate.lifecycle import RunKind
from services.runstate.run_kinds import RunKindSpec, register

INTERRUPTED = (
    "The demo's worker stopped without finishing (killed, or the app or the command restarted); "
    "the steps measured so far are kept."
)


def _execute(run_id: int, should_stop: Callable[[], bool]) -> None:
    # The demo polls its run's status itself; `_stop` tells it a signal came. Its runner is
    # imported by the worker, not by the registry (which every page loads).
    from services.demos.runner import run_demo

    run_demo(run_id)


def _stop(run_id: int) -> None:
    # As above: the worker's code, not the registry's.
    from services.demos.runner import stop_demo

    stop_demo(run_id)


SPEC = register(
    RunKindSpec(RunKind.DEMO, "demo run", execute=_execute, stop=_stop, interrupted=INTERRUPTED)
)
