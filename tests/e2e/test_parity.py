"""A parity run in Chromium on the real local engines: start it from the page with a short
task set, read the per-engine summary and the word diff of a divergence."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import (
    assert_no_exception,
    assert_no_missing_words,
    pick_engines,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e


def test_parity_run_from_the_page(app_page, app_server, all_local_engines_up, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
    monkeypatch.setenv("SHOOTOUT_DATA_DIR", str(app_server.data_dir))
    from services import local_engines
    from services.engines import endpoints

    for spec in local_engines.specs():
        endpoints.register_local(spec)

    page = app_page
    page.goto(f"{app_server.url}/parity")
    wait_for_app(page)
    page.get_by_text("A broken chat template or quantisation").wait_for()
    pick_engines(page, ["llamacpp-4slot", "vllm-cpu"])
    page.locator("[data-testid='stSelectbox']").filter(has_text="Reference").click()
    page.get_by_role("option", name="llamacpp-4slot").click()
    count = page.get_by_label("Task-set prompts")
    count.fill("5")
    count.press("Tab")
    tokens = page.get_by_label("Max tokens")
    tokens.fill("24")
    tokens.press("Tab")
    page.get_by_role("button", name="Run parity").click()
    page.wait_for_url("**/parity?run=*")
    deadline = time.monotonic() + 120
    while not page.get_by_text("finished · task set v1").count():
        if time.monotonic() > deadline:
            screenshot(page, "parity-timeout")
            raise AssertionError("the parity run did not finish on screen")
        time.sleep(1.5)
        page.reload()
        wait_for_app(page)
    assert_no_exception(page)
    assert_no_missing_words(page)
    assert page.get_by_text("exact match vs llamacpp-4slot").count()
    screenshot(page, "parity")
    assert page.get_by_text("Per prompt").count()
    page.locator(".js-plotly-plot").first.wait_for()  # quality against speed
    page.locator(".pg-diff").first.wait_for()  # the word diff of the chosen prompt
    screenshot(page, "parity")
    page.get_by_text("Only the prompts that diverged").click()
    wait_for_app(page)
    page.locator(".parity-divergence").first.wait_for()  # the diverged prompt's next tokens, per engine
    page.locator(".parity-divergence").first.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot(page, "parity-diff").with_name("parity-diff-view.png")))


def _parity_runs(database_url: str) -> int:
    from sqlalchemy import func, select

    from db.models import Run
    from db.session import dispose_all, session_scope
    from services.parity import runner

    with session_scope() as session:
        count = session.scalar(select(func.count()).select_from(Run).where(Run.kind == runner.RUN_KIND))
    dispose_all()
    return int(count or 0)


def test_enter_in_a_field_starts_no_parity_run(app_page, app_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 36 item 3: Enter in a field of the form started a run at once (two runs without a
    click); only "Run parity" starts one."""
    from db.session import dispose_all
    from services.engines import endpoints
    from tests.support.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        monkeypatch.setenv("SHOOTOUT_DATABASE_URL", app_server.database_url)
        for record in endpoints.list_engines():
            endpoints.remove_engine(record.name)
        for name in ("enter-one", "enter-two"):
            endpoints.add_engine(name, server.base_url, model=server.model(tokens=2, itl=1))
        dispose_all()
        before = _parity_runs(app_server.database_url)
        page = app_page
        page.goto(f"{app_server.url}/parity")
        wait_for_app(page)
        for label, value in (("Task-set prompts", "2"), ("Max tokens", "8"), ("Seed", "3")):
            field = page.get_by_label(label)
            field.fill(value)
            field.press("Enter")
            page.wait_for_timeout(1_500)  # a submitted form starts the run and moves to ?run=N
            assert "run=" not in page.url, f"Enter in {label} started a parity run"
        wait_for_app(page)
        assert_no_exception(page)
        assert _parity_runs(app_server.database_url) == before
        # The button still starts one, with what was typed.
        page.get_by_role("button", name="Run parity").click()
        page.wait_for_url("**/parity?run=*")
        assert _parity_runs(app_server.database_url) == before + 1
        wait_for_app(page)
        assert page.get_by_text("2 prompts").count()
        for name in ("enter-one", "enter-two"):
            endpoints.remove_engine(name)
        dispose_all()
