"""Issue 20's upload attack, replayed against the served app (`streamlit run serve.py`) with an
operator and a viewer password: five 150 MB PUTs to Streamlit's upload endpoint without logging
in, then as a logged-in viewer past the per-viewer budget. Prints each answer, how long it took,
and the app process's resident memory before and after (it was 192 MB -> 945 MB before the gate).

    .venv/bin/python -m benchmarks.bench_gate_uploads [--mb 150] [--count 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import httpx2

from services.team import access
from tests.support.served import start_served_app, stop


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def body(size: int) -> Iterator[bytes]:
    chunk = b"x" * (1 << 20)
    for _ in range(size // len(chunk)):
        yield chunk


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=150)
    parser.add_argument("--count", type=int, default=5)
    args = parser.parse_args()
    size = args.mb << 20
    with tempfile.TemporaryDirectory() as folder:
        app = start_served_app(
            Path(folder),
            {"SHOOTOUT_OPERATOR_PASSWORD": "op-bench", "SHOOTOUT_VIEWER_PASSWORD": "v-bench"},
        )
        try:
            before = rss_mib(app.process.pid)
            print(f"app RSS before: {before:.0f} MiB")
            print(f"{'who':10} {'upload':>8} {'answer':>7} {'took':>8}  app RSS")
            login = httpx2.post(
                app.url + "/login", data={"password": "v-bench"}, follow_redirects=False, timeout=10
            )
            viewer = {access.SESSION_COOKIE: login.cookies[access.SESSION_COOKIE]}
            for who, cookies in (("anonymous", {}), ("viewer", viewer)):
                for index in range(args.count):
                    started = time.monotonic()
                    try:
                        status = str(
                            httpx2.put(
                                f"{app.url}/_stcore/upload_file/bench/{who}-{index}",
                                content=body(size),
                                cookies=cookies,
                                headers={"Content-Length": str(size)},
                                timeout=60,
                            ).status_code
                        )
                    except (
                        httpx2.HTTPError
                    ) as error:  # the server may close the connection before the body is sent
                        status = type(error).__name__
                    print(
                        f"{who:10} {args.mb:>5} MB {status:>7} {time.monotonic() - started:>7.2f}s  "
                        f"{rss_mib(app.process.pid):.0f} MiB"
                    )
            time.sleep(2)
            print(f"app RSS after: {rss_mib(app.process.pid):.0f} MiB (before: {before:.0f} MiB)")
        finally:
            stop(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
