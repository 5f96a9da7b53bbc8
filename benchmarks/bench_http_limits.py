"""Each HTTP call site of the product against hostile servers, in a fresh process each:
how long it took to give up and the process's peak memory (issue 13's table).

    .venv/bin/python -m benchmarks.bench_http_limits [--modes huge,endless,stall,trickle]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from tests.services.core.test_http_limits import CALL_SITES
from tests.support.hostile_server import MODES, HostileServer

PROBE = """
import json, resource, sys, time
from tests.services.core.test_http_limits import CALL_SITES
started = time.monotonic()
try:
    said = CALL_SITES[{site!r}]({url!r})
except BaseException as error:
    said = f"{{type(error).__name__}}: {{error}}"
print(json.dumps({{"s": time.monotonic() - started, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "said": said[:120]}}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    print(f"{'call site':22} {'server':14} {'ended after':>12} {'peak RSS':>10}  what it said")
    for mode in modes:
        with HostileServer(mode) as server:
            for site in sorted(CALL_SITES):
                code = PROBE.format(root=str(ROOT), site=site, url=server.url)
                answer = subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
                )
                line = answer.stdout.strip().splitlines()[-1] if answer.stdout.strip() else "{}"
                result = (
                    json.loads(line)
                    if line.startswith("{")
                    else {"s": float("nan"), "rss_mib": float("nan"), "said": answer.stderr[-120:]}
                )
                print(
                    f"{site:22} {mode:14} {result['s']:>10.2f} s {result['rss_mib']:>7.0f} MiB  {result['said']}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
