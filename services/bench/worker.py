"""The benchmark worker process: `python -m services.bench.worker RUN_ID`.

Started detached by `services.bench.jobs.launch_worker`, so a run goes on when the page
that started it closes. SIGTERM or SIGINT stop it like the Cancel button: the requests in
flight are recorded as cancelled and the summary of what ran is written.
"""

from __future__ import annotations

import resource
import sys
import threading


def _raise_file_limit() -> None:
    # Hundreds of concurrent streams need as many sockets; the soft limit is often 1,024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            pass


def main(argv: list[str] | None = None) -> int:
    _raise_file_limit()
    stop = threading.Event()

    from services.bench.jobs import execute_run
    from services.processes import worker_main

    return worker_main(
        sys.argv[1:] if argv is None else argv,
        "services.bench.worker",
        lambda run_id: execute_run(run_id, should_stop=stop.is_set),
        lambda run_id: stop.set(),
    )


if __name__ == "__main__":
    raise SystemExit(main())
