"""Refresh the README's page screenshots (docs/*.png) from a running app.

Usage: .venv/bin/python scripts/screenshots.py [http://127.0.0.1:8501] [--demo RUN] [--compare A,B]
Needs Debian's chromium. The playground shot reopens the latest exchange, the demos shot a
stored demo, the runs shot a comparison when given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

DOCS = Path(__file__).resolve().parent.parent / "docs"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def wait(page: Page) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=60_000)
    page.wait_for_timeout(2500)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", nargs="?", default="http://127.0.0.1:8501")
    parser.add_argument("--demo", help="demo run id to show")
    parser.add_argument("--compare", help="run ids to compare on the Runs shot")
    args = parser.parse_args()
    shots = {
        "playground": "/playground",
        "benchmarks": "/benchmarks",
        "monitor": "/monitor",
        "runs": f"/runs?compare={args.compare}" if args.compare else "/runs",
        "engines": "/engines",
        "planner": "/planner",
        "demos": f"/demos?run={args.demo}" if args.demo else "/demos",
    }
    DOCS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=ARGS
        )
        page = browser.new_page(viewport={"width": 1440, "height": 1100})
        page.goto(args.base)
        wait(page)
        for name, path in shots.items():
            page.goto(args.base + path)
            wait(page)
            if name == "playground":
                page.locator("[data-testid='stExpander'] summary", has_text="Recent exchanges").click()
                page.wait_for_timeout(800)
                page.locator("[class*='st-key-pg_open_'] button").first.click()
                wait(page)
                page.get_by_text("First token:").first.scroll_into_view_if_needed()
            if name == "monitor":
                page.wait_for_timeout(6000)
            page.screenshot(path=str(DOCS / f"{name}.png"), full_page=False)
            print(f"docs/{name}.png")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
