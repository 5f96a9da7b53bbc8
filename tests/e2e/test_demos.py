"""A demo in Chromium: pick engines, pause between steps, move on with "Next step", read the
measured conclusion, reload the stored demo. Engines are emulated (a prefix cache that
halves TTFT, and none) so the story on screen is known in advance."""

from __future__ import annotations

import time

import pytest

from services.core import units
from tests.e2e.conftest import (
    assert_no_exception,
    assert_no_missing_words,
    pick_engines,
    plotted_traces,
    screenshot,
    wait_for_app,
)
from tests.services.demos.demo_server import DemoServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    with DemoServer() as demo_server:
        yield demo_server


def reload_until(page, text: str, timeout_s: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    """The app runs without timed refresh in tests: reload until the stored demo shows `text`."""
    deadline = time.monotonic() + timeout_s
    while True:
        if page.get_by_text(text).count():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} did not appear")
        time.sleep(1.0)
        page.reload()
        wait_for_app(page)


def test_prefix_cache_demo_with_pauses(app_page, app_server, server, monkeypatch, browser) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    server.register("cache-on", "ttft=800,itl=20", cache=0.5)
    server.register("cache-off", "ttft=800,itl=20")

    page = app_page
    page.goto(f"{app_server.url}/demos")
    wait_for_app(page)
    page.get_by_text("An engine with a prefix cache keeps the KV cache").wait_for()
    pick_engines(page, ["cache-on", "cache-off"])
    page.get_by_text("Pause between steps (the presenter").click()
    page.get_by_text("Settings").click()
    page.get_by_role("spinbutton", name="Shared prompt length").fill("300")
    page.get_by_role("spinbutton", name="Chat turns").fill("2")
    page.get_by_role("button", name="Run the demo").click()
    wait_for_app(page)
    assert "run=" in page.url

    page.set_viewport_size({"width": 1440, "height": 2400})  # the whole demo in one screenshot
    reload_until(page, "Paused. Next:")
    assert_no_exception(page)
    page.get_by_text("cache-on: TTFT fell from").first.wait_for()
    screenshot(page, "demos-paused")

    page.get_by_role("button", name="Next step").click()
    wait_for_app(page)
    reload_until(page, "Conclusion, from the numbers above")
    assert_no_exception(page)
    page.get_by_text("Prefix caching cut the time to first token").wait_for()
    assert page.get_by_text("cache-off (no cache): no drop").count() >= 1
    # Plotly draws after the text: on a loaded machine the charts come a moment after the conclusion.
    page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot").nth(1).wait_for()
    assert page.locator("[data-testid='stPlotlyChart']").count() == 2
    assert_no_missing_words(page)
    # Issue 19: the bars show the figures of the big numbers above them (repeated-prompt TTFT).
    text = page.locator("[data-testid='stMain']").inner_text()
    repeated = [t for t in plotted_traces(page) if t["name"].startswith("repeated")]
    # A chart of sub-second times is drawn in ms (issue 36: one unit per chart).
    assert repeated and all(
        units.duration(y / 1000) in text for y in repeated[0]["y"]
    )  # as the big numbers write them (45.0 ms)
    export = page.get_by_role("link", name="Export as HTML report")
    report = page.request.get(f"{app_server.url}/{export.get_attribute('href')}")
    assert report.ok and report.headers["content-disposition"].startswith("attachment;")
    assert "<h2>Demo: Prefix caching" in report.text()  # the demo's story, in the run's report
    screenshot(page, "demos-finished")

    # The stored demo replays in a dark-themed browser too (the theme follows the system's).
    dark = browser.new_page(color_scheme="dark", viewport={"width": 1440, "height": 2400})
    dark.set_default_timeout(60_000)
    try:
        dark.goto(page.url)
        wait_for_app(dark)
        dark.get_by_text("Prefix caching cut the time to first token").wait_for()
        assert_no_exception(dark)
        screenshot(dark, "demos-dark")
    finally:
        dark.close()
