"""The demo worker process: `python -m services.demos.worker RUN_ID`.

Started detached by `runner.start_demo` for the page, as benchmarks are: a demo timestamps
tokens, and inside the Streamlit server its reader would share the GIL with every page run
(the stalls that once gave three Playground columns one TTFT). SIGTERM or SIGINT stop it
like the Stop button: the requests in flight finish, what was measured is kept.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from services.demos.runner import run_demo, stop_demo
    from services.processes import worker_main

    return worker_main(
        sys.argv[1:] if argv is None else argv, "services.demos.worker", run_demo, stop_demo
    )


if __name__ == "__main__":
    raise SystemExit(main())
