"""Browser end-to-end harness: the real app (`streamlit run serve.py`: app.py behind the login gate)
in a subprocess on a free port, driven by Playwright in Debian's Chromium. Screenshots go to
test-artifacts/screenshots/ (look at them).

Usage in a test:
    def test_x(app_page, app_server): app_page.goto(app_server.url + "/engines"); wait_for_app(app_page)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One app server for the browser tests, with its own database."""
    data_dir = tmp_path_factory.mktemp("e2e-data")
    port = _free_port()
    database_url = f"sqlite:///{data_dir / 'shootout.db'}"
    env = {
        **os.environ,
        "SHOOTOUT_DATA_DIR": str(data_dir),
        "SHOOTOUT_DATABASE_URL": database_url,
        "SHOOTOUT_NO_AUTOREFRESH": "1",
    }
    log_file = data_dir / "streamlit.log"
    with open(log_file, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx2.get(url + "/_stcore/health", timeout=2).text.strip() == "ok":
                break
        except httpx2.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"streamlit did not start: {log_file.read_text()[-2000:]}")
        time.sleep(0.5)
    yield AppServer(url=url, data_dir=data_dir, database_url=database_url, process=process, log_file=log_file)
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    assert Path(CHROMIUM).exists(), "Chromium is missing: install Debian's chromium (test.sh does)"
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"],
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


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def assert_no_exception(page) -> None:  # type: ignore[no-untyped-def]
    """No traceback on screen."""
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()


def assert_no_missing_words(page) -> None:  # type: ignore[no-untyped-def]
    """No "None", "nan" or "NaN" standing alone in the page's text (a missing value must read
    as a dash or in words). Tables drawn on a canvas are checked through their services."""
    import re

    text = page.locator("[data-testid='stMain']").inner_text()
    found = re.findall(r"(?<![\w-])(None|nan|NaN)(?![\w-])", text)
    assert not found, f"{found[:3]} on screen: ...{text[max(0, text.find(found[0]) - 80):][:200]}..."


def plotted_traces(page) -> list[dict]:  # type: ignore[no-untyped-def]
    """Every Plotly trace on the page as the browser holds it: name, x and y."""
    return page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(g => (g.data || []).map(t => "
        "({name: t.name || '', x: Array.from(t.x || []), y: Array.from(t.y || [])})))"
    )
