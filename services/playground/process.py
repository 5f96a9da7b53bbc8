"""The worker process of a playground exchange sent from the page: `python -m
services.playground.process RUN_ID` streams the stored exchange (its Exchange rows say what
to ask which engine) and writes it as it arrives, away from the Streamlit server's GIL, whose
pauses would otherwise sit between a chunk's arrival and its timestamp. A stop comes as a
cancel in the database (the page's Stop button) or as SIGTERM; what arrived is kept."""

from __future__ import annotations

import sys

from services import lifecycle
from services.errors import ShootoutError
from services.lifecycle import RunStatus
from services.processes import worker_main


def _run(run_id: int) -> None:
    from services.playground import sending, worker

    try:
        streams = sending.streams_for(run_id)
    except ShootoutError as error:  # an engine removed between the send and this start
        lifecycle.finish(run_id, RunStatus.FAILED, error=str(error))
        raise
    worker.run_here(run_id, streams)


def _stop(run_id: int) -> None:
    from services.playground import worker

    worker.stop(run_id)


def main(argv: list[str] | None = None) -> int:
    return worker_main(
        sys.argv[1:] if argv is None else argv, "services.playground.process", _run, _stop
    )


if __name__ == "__main__":
    raise SystemExit(main())
