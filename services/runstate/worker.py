"""The one worker process of every run kind: `python -m services.runstate.worker KIND RUN_ID`.

Started detached by `services.core.processes.launch_run_worker`, so a run goes on when the page or
command that started it ends, and its timing is away from the Streamlit server's GIL. What it
runs is the kind's `execute` (services/runstate/run_kinds.py). SIGTERM or SIGINT stop it like the
page's Cancel or Stop button: the kind's body sees the stop flag (and its `stop` hook runs),
what ran is kept.
"""

from __future__ import annotations

import resource
import sys
import threading

from services.core.processes import worker_main
from services.runstate import run_kinds


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
    spec = run_kinds.get(args[0]) if args else None
    if spec is None or spec.execute is None:
        known = ", ".join(s.kind for s in run_kinds.specs() if s.execute is not None)
        print(f"usage: python -m services.runstate.worker KIND RUN_ID (KIND: {known})", file=sys.stderr)
        return 2
    if spec.many_sockets:
        _raise_file_limit()
    stop = threading.Event()
    execute, hook = spec.execute, spec.stop

    def on_stop(run_id: int) -> None:
        stop.set()
        if hook is not None:
            hook(run_id)

    return worker_main(
        args[1:],
        f"services.runstate.worker {spec.kind}",
        lambda run_id: execute(run_id, stop.is_set),
        on_stop,
    )


if __name__ == "__main__":
    raise SystemExit(main())
