"""The tuning worker process: `python -m services.tune.worker RUN_ID`.

Started detached by `services.tune.jobs.start_tuning`, so a sweep goes on when the page that
started it closes. SIGTERM or SIGINT stop it like the Cancel button: the benchmark in flight
stops, the engine it started is stopped, what ran is kept.
"""

from __future__ import annotations

import sys
import threading


def main(argv: list[str] | None = None) -> int:
    stop = threading.Event()

    from services.processes import worker_main
    from services.tune.jobs import execute_run

    return worker_main(
        sys.argv[1:] if argv is None else argv,
        "services.tune.worker",
        lambda run_id: execute_run(run_id, should_stop=stop.is_set),
        lambda run_id: stop.set(),
    )


if __name__ == "__main__":
    raise SystemExit(main())
