"""The benchmark worker process: `python -m services.bench.worker RUN_ID`.

Started detached by `services.bench.jobs.launch_worker`, so a run goes on when the page
that started it closes. SIGTERM or SIGINT stop it like the Cancel button: the requests in
flight are recorded as cancelled and the summary of what ran is written.
"""

from __future__ import annotations

import resource
import signal
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
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m services.bench.worker RUN_ID", file=sys.stderr)
        return 2
    run_id = int(args[0])
    _raise_file_limit()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    from services.bench.jobs import execute_run
    from services.errors import ShootoutError

    try:
        execute_run(run_id, should_stop=stop.is_set)
    except ShootoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
