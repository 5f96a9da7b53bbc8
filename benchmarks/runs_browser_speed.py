"""How fast the Runs page opens in a real browser on a big history.

Starts the app (`streamlit run app.py`) on a database made by runs_list_speed.py, opens
the history and a 4-run comparison in headless Chromium, and prints the time from
navigation to "script finished and the table/charts are on screen" (median of a few
loads; the first load also pays the app's imports).

    .venv/bin/python -m benchmarks.runs_list_speed --keep /tmp/runs-speed   # once
    .venv/bin/python -m benchmarks.runs_browser_speed /tmp/runs-speed
"""

from __future__ import annotations

import argparse
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from playwright.sync_api import sync_playwright

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCRIPT_DONE = (
    "() => { const a = document.querySelector(\"[data-testid='stApp']\");"
    " return a && a.getAttribute('data-test-script-state') === 'notRunning'"
    " && a.getAttribute('data-test-connection-state') === 'CONNECTED'; }"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="folder holding shootout.db (from runs_list_speed.py --keep)")
    parser.add_argument("--loads", type=int, default=4)
    args = parser.parse_args()
    database = Path(args.folder) / "shootout.db"
    if not database.exists():
        print(
            f"{database} is missing: run benchmarks/runs_list_speed.py --keep {args.folder} first",
            file=sys.stderr,
        )
        return 1
    with sqlite3.connect(database) as connection:
        runs_total, rows_total = connection.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM request_results)"
        ).fetchone()
        compared = [
            row[0]
            for row in connection.execute(
                "SELECT id FROM runs WHERE kind = 'benchmark' AND engine_names NOT LIKE '%,%' ORDER BY id DESC LIMIT 4"
            )
        ]
    port = free_port()
    env = {
        **os.environ,
        "SHOOTOUT_DATA_DIR": str(database.parent),
        "SHOOTOUT_DATABASE_URL": f"sqlite:///{database}",
        "SHOOTOUT_NO_AUTOREFRESH": "1",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(port),
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx2.get(url + "/_stcore/health", timeout=2).text.strip() == "ok":
                    break
            except httpx2.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                print("streamlit did not start", file=sys.stderr)
                return 1
            time.sleep(0.3)
        views = {
            "history (25 of 10,000 runs)": ("/runs", "[data-testid='stDataFrame']"),
            f"4-run comparison {compared}": (
                "/runs?compare=" + ",".join(map(str, compared)),
                "[data-testid='stPlotlyChart'] .main-svg",
            ),
        }
        print(f"database: {runs_total:,} runs, {rows_total:,} request rows")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS
            )
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(120_000)
            for label, (path, selector) in views.items():
                times = []
                for _ in range(args.loads):
                    page.goto("about:blank")
                    start = time.perf_counter()
                    page.goto(url + path)
                    page.wait_for_selector("[data-testid='stApp']")
                    page.wait_for_function(SCRIPT_DONE)
                    page.wait_for_selector(selector, state="visible")
                    times.append(time.perf_counter() - start)
                print(
                    f"{label:<45} first {times[0] * 1000:6.0f} ms   median of the rest "
                    f"{statistics.median(times[1:]) * 1000:6.0f} ms"
                )
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
