"""Every page opens in Chromium without a traceback; an engine is registered through the
Engines page form and appears in the list."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, assert_no_missing_words, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

PAGES = ["playground", "benchmarks", "monitor", "runs", "engines", "planner", "demos", "parity"]


def open_add_form(page) -> None:  # type: ignore[no-untyped-def]
    if not page.get_by_label("Name").is_visible():
        page.locator("[data-testid='stExpander'] summary", has_text="Add an endpoint").click()
    page.get_by_label("Name").wait_for()


@pytest.mark.parametrize("slug", PAGES)
def test_page_opens(app_page, app_server, slug: str) -> None:
    app_page.goto(f"{app_server.url}/{slug}")
    wait_for_app(app_page)
    assert_no_exception(app_page)
    # A deep link goes through app.py: its navigation, not Streamlit's legacy page list.
    assert app_page.locator("[data-testid='stSidebarNav']").count() == 0
    assert app_page.get_by_role("link", name="Benchmarks").count() >= 1
    assert app_page.get_by_text("Page not found").count() == 0
    assert_no_missing_words(app_page)
    screenshot(app_page, f"page-{slug}")


def test_register_engine_through_form(app_page, app_server, all_local_engines_up) -> None:
    app_page.goto(f"{app_server.url}/engines")
    wait_for_app(app_page)
    open_add_form(app_page)
    app_page.get_by_label("Name").fill("browser-added")
    from services.local_engines import get_spec

    app_page.get_by_label("Base URL").fill(f"http://127.0.0.1:{get_spec('vllm-cpu').port}/v1")
    app_page.get_by_role("button", name="Probe and add").click()
    wait_for_app(app_page)
    app_page.get_by_text("Added browser-added (vLLM).").wait_for()
    assert_no_exception(app_page)
    screenshot(app_page, "engines-registered")
    # The list below shows it after a reload, from the database.
    app_page.reload()
    wait_for_app(app_page)
    assert app_page.locator(".st-key-engine_card_browser-added").count() == 1


def test_bad_url_is_a_clear_message(app_page, app_server) -> None:
    app_page.goto(f"{app_server.url}/engines")
    wait_for_app(app_page)
    open_add_form(app_page)
    app_page.get_by_label("Name").fill("nowhere")
    app_page.get_by_label("Base URL").fill("http://127.0.0.1:9")
    app_page.get_by_role("button", name="Probe and add").click()
    wait_for_app(app_page)
    app_page.get_by_text("connection refused").first.wait_for()
    assert_no_exception(app_page)
    screenshot(app_page, "engines-unreachable")


def test_planner_chart_marks_the_decode_bound_it_states(app_page, app_server) -> None:  # type: ignore[no-untyped-def]
    """Issue 19: each chart's figure equals the number beside it. The decode-ceiling chart's
    marker for the planned batch sits at the "Decode bound" the page states."""
    import re

    from tests.e2e.conftest import plotted_traces

    app_page.goto(f"{app_server.url}/planner")
    wait_for_app(app_page)
    app_page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for()
    metric = app_page.locator("[data-testid='stMetric']", has_text="Decode bound").first.inner_text()
    stated = float(re.search(r"([\d,]+) tok/s", metric).group(1).replace(",", ""))
    marker = next(t for t in plotted_traces(app_page) if t["name"].startswith("batch "))
    assert abs(marker["y"][0] - stated) <= 1.0, (marker, stated)
    axis_end = max(x for t in plotted_traces(app_page) if t["name"] == "decode bound" for x in t["x"])
    assert axis_end < 1e6  # no 1e26-1e65 batch axis
