"""Refresh the README's page screenshots (docs/*.png) from a running app.

Usage: .venv/bin/python scripts/screenshots.py [http://127.0.0.1:8501]
Needs Debian's chromium. Each page is opened through the app's root first, so that
navigation is set up as for a user.
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["playground", "benchmarks", "monitor", "runs", "engines", "planner", "demos"]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def main() -> int:
    base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8501"
    DOCS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        for slug in PAGES:
            page.goto(f"{base}/{slug}")
            page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=60_000)
            page.wait_for_timeout(2500)
            page.screenshot(path=str(DOCS / f"{slug}.png"), full_page=False)
            print(f"docs/{slug}.png")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
