"""The first pair (issue 58): a newcomer who opens the Playground while `./run.sh` still installs
the local engines sees each one coming with its phase and estimate, and, without a reload, gets
the first two engines that answer picked for them.

In Chromium, against `./run.sh` in a scratch clone (tests/reliability/test_first_minute.py's):
llama.cpp is built from the stand-in source, whose build takes 45 s and whose `llama-server`
runs the real one this machine installed, so its two engines (4 slots and 1 slot) come up for
real and answer. Timed refreshes are on, as for a user.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from services import local_engines
from services.engines.llamacpp.local import server_args
from tests.conftest import REPO_ROOT
from tests.reliability.test_first_minute import (
    FAKE_SOURCE,
    PIP_SOURCES,
    _clone,
    _end,
    _run_sh,
    _venv,
    venv_template,  # noqa: F401 - the fixture, shared
)

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = REPO_ROOT / "test-artifacts" / "screenshots"


def test_the_playground_shows_the_engines_coming_and_picks_the_first_two(
    tmp_path: Path,
    venv_template: Path,  # noqa: F811 - the fixture imported above
) -> None:
    assert Path(CHROMIUM).exists(), "Chromium is missing: install Debian's chromium (test.sh does)"
    real = local_engines.llama_server_path()
    assert real is not None, "the real llama.cpp must be installed here (./test.sh installs it)"
    given = "".join(
        f"{key} = {os.environ[var]}\n" for var, key in PIP_SOURCES.items() if os.environ.get(var)
    )
    _venv(venv_template, tmp_path / "engines" / "llamacpp-venv", f"[global]\n{given}" if given else "")
    scratch = _run_sh(
        tmp_path,
        _clone(tmp_path, venv_template),
        {
            "SHOOTOUT_LOCAL_ENGINES": "llamacpp",
            "SHOOTOUT_LLAMA_CPP_SOURCE": str(FAKE_SOURCE),
            "FAKE_LLAMA_BUILD_SECONDS": "45",
            "FAKE_LLAMA_REAL_SERVER": str(real),
            "FAKE_LLAMA_REAL_ARGS": " ".join(server_args()),
            "SHOOTOUT_NO_AUTOREFRESH": "0",
        },
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(scratch.url + "/playground")
            # While llama.cpp builds: what is coming, its phase and the estimate, no picker yet.
            expect(page.get_by_text("Waiting for a second engine")).to_be_visible()
            coming = page.get_by_text("installing: build", exact=False)
            expect(coming.first).to_be_visible()
            expect(page.get_by_text("of about", exact=False).first).to_be_visible()
            assert page.locator("[data-testid='stMultiSelect']").count() == 0
            page.screenshot(path=str(SCREENSHOTS / "playground-waiting.png"), full_page=True)

            # The build ends, both servers answer: the same page, never reloaded, now offers
            # the picker with the two of them picked.
            box = page.locator("[data-testid='stMultiSelect']").filter(has_text="Engines")
            expect(box).to_be_visible(timeout=240_000)
            for name in ("llamacpp-4slot", "llamacpp-1slot"):
                expect(box.locator(f"[data-tag][aria-label='{name}']")).to_be_visible()
            expect(page.get_by_text("Waiting for a second engine")).to_have_count(0)
            page.screenshot(path=str(SCREENSHOTS / "playground-first-pair.png"), full_page=True)
            browser.close()
        statuses = scratch.statuses()
        assert statuses["llamacpp-4slot"]["status"] == "running"
        assert statuses["llamacpp-1slot"]["status"] == "running"
    finally:
        _end(scratch)
