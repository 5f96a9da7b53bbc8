"""The README's page screenshots (docs/*.png), made by this script from the served app (issue
47: they showed an older layout). It drives headless Chromium (Playwright, Debian's chromium)
over the app at 1440x1100 and writes `docs/<page>.png`.

    python scripts/screenshots.py --serve                # start the app itself, then every page
    python scripts/screenshots.py http://127.0.0.1:8501  # a running app (with your data)
    python scripts/screenshots.py --serve --pages runs parity
    python scripts/screenshots.py URL --demo 12 --compare 14,15
    python scripts/screenshots.py --serve --sample-data  # the README's shots: data made first

`--serve` runs `streamlit run serve.py` on 127.0.0.1 with a database of its own and the local
engines that are registered on this machine (so the pages show real engines); the app and its
data folder go when the script ends. `--sample-data` first makes what the pages show, by the
command line, on the running local engines: a Playground exchange (`ask`), two small benchmarks
(compared on the Runs shot) and the prefix-cache demo. The playground shot reopens the latest exchange when there
is one, the demos shot a stored demo (`--demo`), the runs shot a comparison (`--compare`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = ("playground", "benchmarks", "monitor", "runs", "engines", "planner", "demos", "parity")


def wait(page: Page) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=90_000)
    page.wait_for_timeout(2500)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def register_local_engines(env: dict[str, str]) -> None:
    """The local engines into the screenshot database, in a child process that reads the
    database settings from `env` (this one never opens the database)."""
    code = "from services import local_engines as s\nfrom services.engines import endpoints\nfor spec in s.specs():\n    endpoints.register_local(spec)\n"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=120)


def serve(env: dict[str, str], log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """`streamlit run serve.py` on a free port of 127.0.0.1 (as run.sh starts it), once healthy."""
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                *("-m", "streamlit", "run", "serve.py", "--server.headless", "true"),
                *("--server.address", "127.0.0.1", "--server.port", str(port)),
                *("--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as reply:
                if reply.read().strip() == b"ok":
                    return url, process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit(f"serve.py did not start: {log.read_text()[-2000:]}")


def cli_json(env: dict[str, str], *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "cli.py", *args],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"cli.py {' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def sample_data(env: dict[str, str], engines: list[str]) -> tuple[str, str]:
    """What the README's shots show, made on the running local engines: (demo run, the two
    benchmark runs to compare)."""
    picks = [arg for name in engines for arg in ("--engine", name)]
    prompt = "Explain prefix caching to a new engineer in three sentences."
    cli_json(env, "ask", prompt, *picks, "--max-tokens", "96", "--json")
    benches = [
        cli_json(
            env,
            "bench",
            *picks,
            *(
                "--concurrency",
                "4",
                "--requests",
                "16",
                "--input-len",
                "128",
                "--output-len",
                "32",
            ),
            *("--quiet", "--json", "-"),
        )["run_id"]
        for _repeat in range(2)  # two runs of one setup: the comparison judges them as repeats
    ]
    demo = cli_json(
        env, "demo", "prefix-cache", "--engines", ",".join(engines), "--set", "turns=2", "--json"
    )["run_id"]
    return str(demo), ",".join(str(run) for run in benches)


def shoot(base: str, pages: list[str], demo: str | None, compare: str | None) -> None:
    paths = {name: f"/{name}" for name in PAGES}
    if compare:
        paths["runs"] = f"/runs?compare={compare}"
    if demo:
        paths["demos"] = f"/demos?run={demo}"
    DOCS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=ARGS
        )
        page = browser.new_page(viewport={"width": 1440, "height": 1100})
        page.goto(base)
        wait(page)
        for name in pages:
            page.goto(base + paths[name])
            wait(page)
            if name == "playground":
                recent = page.locator("[data-testid='stExpander'] summary", has_text="Recent exchanges")
                if recent.count():
                    recent.first.click()
                    page.wait_for_timeout(800)
                    opened = page.locator("[class*='st-key-pg_open_'] button")
                    if opened.count():
                        opened.first.click()
                        wait(page)
            if name == "monitor":
                page.wait_for_timeout(6000)
            page.screenshot(path=str(DOCS / f"{name}.png"), full_page=False)
            print(f"docs/{name}.png")
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", default="http://127.0.0.1:8501")
    parser.add_argument("--serve", action="store_true", help="start the app itself (own data)")
    parser.add_argument("--pages", nargs="+", choices=PAGES, default=list(PAGES))
    parser.add_argument("--demo", help="demo run id to show")
    parser.add_argument("--compare", help="run ids to compare on the Runs shot")
    parser.add_argument(
        "--sample-data", action="store_true", help="with --serve: make runs to show first"
    )
    parser.add_argument("--engines", default="vllm-cpu,llamacpp-4slot", help="engines for --sample-data")
    args = parser.parse_args()
    if not args.serve:
        shoot(args.base, args.pages, args.demo, args.compare)
        return 0
    with tempfile.TemporaryDirectory(prefix="shootout-shots-") as data:
        env = {
            **os.environ,
            "SHOOTOUT_DATA_DIR": data,
            "SHOOTOUT_DATABASE_URL": f"sqlite:///{data}/shootout.db",
            "SHOOTOUT_NO_AUTOREFRESH": "1",
        }
        register_local_engines(env)
        if args.sample_data:
            args.demo, args.compare = sample_data(env, args.engines.split(","))
        base, process = serve(env, Path(data) / "serve.log")
        try:
            shoot(base, args.pages, args.demo, args.compare)
        finally:
            process.terminate()
            process.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
