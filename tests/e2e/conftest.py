"""Browser end-to-end harness: the real app (`streamlit run serve.py`: app.py behind the login gate)
in a subprocess on a free port, driven by Playwright in Debian's Chromium. Screenshots go to
test-artifacts/screenshots/ (look at them).

Usage in a test:
    def test_x(app_page, app_server): app_page.goto(app_server.url + "/engines"); wait_for_app(app_page)
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.served import start_served_app, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = REPO_ROOT / "test-artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@dataclass
class AppServer:
    url: str
    data_dir: Path
    database_url: str
    process: subprocess.Popen
    log_file: Path


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app server for the browser tests, with its own database."""
    data_dir = tmp_path_factory.mktemp("e2e-data")
    served = start_served_app(data_dir, {})
    yield AppServer(
        url=served.url,
        data_dir=data_dir,
        database_url=f"sqlite:///{data_dir / 'shootout.db'}",
        process=served.process,
        log_file=served.log,
    )
    stop(served)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    assert Path(CHROMIUM).exists(), "Chromium is missing: install Debian's chromium (test.sh does)"
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    return {**browser_context_args, "viewport": {"width": 1440, "height": 1000}}


@pytest.fixture
def app_page(page, app_server: AppServer):  # type: ignore[no-untyped-def]
    """A Playwright page with the app's default timeout raised for this small machine."""
    page.set_default_timeout(60_000)
    return page


def wait_for_app(page, timeout_ms: int = 60_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the script finished its run and the connection is up."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    page.wait_for_function(
        "() => { const a = document.querySelector(\"[data-testid='stApp']\");"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'"
        " && a.getAttribute('data-test-connection-state') === 'CONNECTED'; }",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(300)


def close_lists(page) -> None:  # type: ignore[no-untyped-def]
    """Close a multiselect's open list. Escape alone can land while a rerun redraws the widget
    (a loaded machine), leaving its "No results" list over the next thing to click: then a
    click on the page's title closes it."""
    page.keyboard.press("Escape")
    lists = page.locator("[role='listbox']")
    try:
        lists.first.wait_for(state="hidden", timeout=5_000)
    except Exception:  # noqa: BLE001 - playwright's TimeoutError: still open
        page.locator("h1").first.click()
        lists.first.wait_for(state="hidden", timeout=10_000)


def pick_engines(page, names: list[str], label: str = "Engines") -> list[str]:  # type: ignore[no-untyped-def]
    """Pick exactly `names` in the multiselect labelled `label`; the pick as the page holds it,
    in its order. Comparing pages start from a default pick: it is cleared first, and the
    clear's rerun is waited for. Late in the whole suite the pick has come back in the default's
    order twice (CI of stop 41, and the suite of stop 42; never alone): a test that depends on
    the order reads it from here, or from the run. Never pick by clicking a listed option after
    reading the pick: the default can land between the read and the click (CI of stop 52)."""
    box = page.locator("[data-testid='stMultiSelect']").filter(has_text=label)
    # The picker is drawn by the run that sets its default pick: once it is in the page, the
    # pick read below is that run's (right after a load, the page can report "not running"
    # before its first run began, and a pick read then is empty).
    box.first.wait_for()
    tags = box.locator("[data-tag]")
    clear = box.get_by_role("button", name="Clear all")
    if clear.count():
        clear.first.click()
        wait_for_app(page)
        expect(tags).to_have_count(0, timeout=30_000)
    for name in names:
        chip = box.locator(f"[data-tag][aria-label='{name}']")
        for attempt in range(3):  # a rerun that redraws the picker can swallow the keys
            box.locator("input").click()
            box.locator("input").fill(name)
            page.keyboard.press("Enter")
            wait_for_app(page)  # each pick reruns the page: the next keys wait for it
            try:
                chip.first.wait_for(timeout=10_000 if attempt < 2 else 30_000)
                break
            except Exception:  # playwright's TimeoutError: try the keys again
                if attempt == 2:
                    raise
    close_lists(page)
    wait_for_app(page)
    picked = [str(tags.nth(i).get_attribute("aria-label")) for i in range(tags.count())]
    assert sorted(picked) == sorted(names), f"picked {picked}, wanted {names}"
    return picked


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def assert_no_exception(page) -> None:  # type: ignore[no-untyped-def]
    """No traceback on screen."""
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']"
    ).first.inner_text()


def assert_no_missing_words(page) -> None:  # type: ignore[no-untyped-def]
    """No "None", "nan" or "NaN" standing alone in the page's text (a missing value must read
    as a dash or in words). Tables drawn on a canvas are checked through their services."""
    import re

    text = page.locator("[data-testid='stMain']").inner_text()
    found = re.findall(r"(?<![\w-])(None|nan|NaN)(?![\w-])", text)
    assert not found, f"{found[:3]} on screen: ...{text[max(0, text.find(found[0]) - 80) :][:200]}..."


def plotted_traces(page) -> list[dict]:  # type: ignore[no-untyped-def]
    """Every Plotly trace on the page as the browser holds it: name, x and y."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(g => (g.data || []).map(t => "
        "({name: t.name || '', x: Array.from(t.x || []), y: Array.from(t.y || [])})))"
    )
