"""The parity worker process: `python -m services.parity.worker RUN_ID`.

Started detached by `runner.start_parity` for the page, as benchmarks are, so a run goes on
when the page closes. SIGTERM or SIGINT stop it like the Cancel button: it stops before its
next request and the summary of what was answered is written.
"""

from __future__ import annotations

import sys
import threading


def main(argv: list[str] | None = None) -> int:
    stop = threading.Event()

    from services.parity.runner import execute_parity
    from services.processes import worker_main

    return worker_main(
        sys.argv[1:] if argv is None else argv,
        "services.parity.worker",
        lambda run_id: execute_parity(run_id, should_stop=stop.is_set),
        lambda run_id: stop.set(),
    )


if __name__ == "__main__":
    raise SystemExit(main())
