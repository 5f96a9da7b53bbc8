"""Every page opens in Chromium without a traceback; an engine is registered through the
Engines page form and appears in the list."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from app_pages import registry
from tests.e2e.conftest import assert_no_exception, assert_no_missing_words, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

#: Every page app.py routes to, by its address.
PAGES = [page.url_path for page in registry.PAGES]


def add_form_details(page):  # type: ignore[no-untyped-def]
    return page.locator("[data-testid='stExpander']", has_text="Add an endpoint").locator(
        "[data-testid='stExpanderDetails']"
    )


def add_form_is_open(page) -> bool:  # type: ignore[no-untyped-def]
    # A folded expander's body is inert at once, while Playwright still calls its fields
    # visible for the length of the folding animation.
    return not add_form_details(page).evaluate("details => details.inert")


def open_add_form(page) -> None:  # type: ignore[no-untyped-def]
    if not add_form_is_open(page):
        page.locator("[data-testid='stExpander'] summary", has_text="Add an endpoint").click()
    expect(page.get_by_label("Name")).to_be_editable()


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
    # vllm-cpu itself may be registered at that URL already: a second name must be asked for.
    app_page.locator(".st-key-add_same_url label").click()
    app_page.get_by_role("button", name="Probe and add").click()
    wait_for_app(app_page)
    app_page.get_by_text("Added browser-added (vLLM).").wait_for()
    assert_no_exception(app_page)
    # The sidebar counts the endpoint just added on the same run (it was one run behind).
    cards = app_page.locator("[class*='st-key-engine_card_']").count()
    expect(app_page.locator("[data-testid='stSidebar']")).to_contain_text(
        f"{cards} engine(s) registered"
    )
    screenshot(app_page, "engines-registered")
    # The list below shows it after a reload, from the database.
    app_page.reload()
    wait_for_app(app_page)
    assert app_page.locator(".st-key-engine_card_browser-added").count() == 1


def test_add_form_stays_open_when_an_endpoint_appears(app_page, app_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The form opens by itself while nothing is registered. An endpoint registered meanwhile
    (a teammate's, a local engine coming up) must not fold it under the user on the next run:
    an untracked expander folds when its `expanded` changes, hiding half-typed input (a form
    test in CI saw the field turn inert, then invisible, as it does here)."""
    from db.session import dispose_all
    from services.engines import endpoints

    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    for record in endpoints.list_engines():  # tests that need engines register their own
        endpoints.remove_engine(record.name)
    try:
        app_page.goto(f"{app_server.url}/engines")
        wait_for_app(app_page)
        assert add_form_is_open(app_page)
        app_page.get_by_label("Name").fill("half-typed")
        endpoints.add_engine("appeared-meanwhile", "http://127.0.0.1:9/v1", kind="vllm", model="m")
        app_page.locator("h1").first.click()
        app_page.keyboard.press("r")  # Streamlit's rerun key, as a user or any widget would rerun
        app_page.locator(".st-key-engine_card_appeared-meanwhile").wait_for()
        wait_for_app(app_page)
        assert add_form_is_open(app_page)
        expect(app_page.get_by_label("Name")).to_have_value("half-typed")
        assert_no_exception(app_page)
    finally:
        endpoints.remove_engine("appeared-meanwhile")
        dispose_all()


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
