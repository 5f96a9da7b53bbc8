"""Playground exchanges as a run kind: the worker streams the stored exchange (its Exchange
rows say what to ask which engine) and writes it as it arrives, away from the Streamlit
server's GIL, whose pauses would otherwise sit between a chunk's arrival and its timestamp.
A stop comes as a cancel in the database (the page's Stop button) or as SIGTERM; what
arrived is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.orm import object_session

from db.models import Exchange
from services.core.errors import ShootoutError
from services.runstate import lifecycle
from services.runstate.lifecycle import RunKind, RunStatus
from services.runstate.run_kinds import RunKindSpec, register

if TYPE_CHECKING:
    from db.models import Run

INTERRUPTED = "The app stopped while this exchange was streaming; the partial answers are kept."


def _execute(run_id: int, should_stop: Callable[[], bool]) -> None:
    # The streaming code is imported by the worker, not by the registry.
    from services.playground import sending, worker

    try:
        streams = sending.streams_for(run_id)
    except ShootoutError as error:  # an engine removed between the send and this start
        lifecycle.finish(run_id, RunStatus.FAILED, error=str(error))
        raise
    worker.run_here(run_id, streams)


def _stop(run_id: int) -> None:
    # The streaming code is imported by the worker, not by the registry.
    from services.playground import worker

    worker.stop(run_id)


def mark_streams_interrupted(run: Run) -> None:
    """The exchange's answers still "streaming" when its worker went are interrupted too."""
    session = object_session(run)
    if session is not None:
        session.execute(
            update(Exchange)
            .where(Exchange.run_id == run.id, Exchange.status == "streaming")
            .values(status="interrupted")
        )


SPEC = register(
    RunKindSpec(
        RunKind.PLAYGROUND,
        "exchange",
        execute=_execute,
        stop=_stop,
        interrupted=INTERRUPTED,
        on_interrupted=mark_streams_interrupted,
    )
)
