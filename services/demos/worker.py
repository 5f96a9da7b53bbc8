"""The demo worker process: `python -m services.demos.worker RUN_ID`.

Started detached by `runner.start_demo` for the page, as benchmarks are: a demo timestamps
tokens, and inside the Streamlit server its reader would share the GIL with every page run
(the stalls that once gave three Playground columns one TTFT). SIGTERM or SIGINT stop it
like the Stop button: the requests in flight finish, what was measured is kept.
"""

from __future__ import annotations

import signal
import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m services.demos.worker RUN_ID", file=sys.stderr)
        return 2
    run_id = int(args[0])

    from services.demos.runner import run_demo, stop_demo
    from services.errors import ShootoutError

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop_demo(run_id))
    try:
        run_demo(run_id)
    except ShootoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
